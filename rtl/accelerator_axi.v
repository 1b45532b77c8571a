`default_nettype none
// The accelerator behind standard buses, for a Vivado block design or a Zynq/Versal system:
// an AXI4-Lite slave for control and status, an AXI4-Stream command input and an AXI4-Stream
// read-data output for bulk transfers. Inside, the accelerator (rtl/accelerator.v) is unchanged
// and its host port stays the one internal interface; both buses are turned into host-port
// accesses here. Register map and stream format: docs/microarchitecture.md, "AXI top".
//
// AXI4-Lite (byte addresses, 32-bit registers; byte strobes other than 4'hF, writes to
// read-only registers and unmapped addresses answer SLVERR and change nothing):
//   0x000 CONTROL     W   bit 0: start (a one-cycle pulse; ignored while busy)
//   0x004 STATUS      R   {error[2], done[1], busy[0]} straight from the accelerator
//   0x008 HOST_ADDR   RW  host-port address of the next HOST_DATA access
//   0x00C HOST_DATA   RW  a host-port write or read at HOST_ADDR, then HOST_ADDR + 1
//   0x010 IRQ_ENABLE  RW  bit 0: `irq` follows IRQ_STATUS
//   0x014 IRQ_STATUS  R/W1C bit 0: set when `done` rises (a run ended); write 1 to clear
//   0x018 ID          R   0x53414301 ("SAC", version 1)
//   0x100 + 4*n       RW  host-port region 0 (control/status) offset n, n = 0..15: status with
//                         error code, cycles, pc, activity, retired, config, start pc (n = 8)
// AXI4-Stream command input, 64-bit beats: bit 63 = 1 read, 0 write; bits 62:32 = host-port
// address bits 30:0 (bit 31 is 0 for every region the accelerator has); bits 31:0 = write
// data. Every read command yields one 32-bit beat on the output stream, in order, with the
// command's TLAST. Commands wait while the accelerator runs (its memories belong to the
// program then), so a host may queue the next image's tensor behind a run.
module accelerator_axi #(
    parameter ROWS = 8,
    parameter COLS = 8,
    parameter CMAX = 64,
    parameter DDEPTH = 1024,
    parameter PDEPTH = 1024,
    parameter WDEPTH = 512,
    parameter BDEPTH = 512,
    parameter SDEPTH = 64,
    parameter IMEM_DEPTH = 256,
    parameter AXIL_ADDR_WIDTH = 12,      // AXI4-Lite address bits (the map needs 9)
    parameter FIFO_DEPTH = 8             // read results held for the output stream (>= 8: one read per clock)
) (
    input  wire         aclk,
    input  wire         aresetn,
    output wire         irq,
    // AXI4-Lite slave
    input  wire [AXIL_ADDR_WIDTH-1:0] s_axi_awaddr,
    input  wire [2:0]   s_axi_awprot,
    input  wire         s_axi_awvalid,
    output wire         s_axi_awready,
    input  wire [31:0]  s_axi_wdata,
    input  wire [3:0]   s_axi_wstrb,
    input  wire         s_axi_wvalid,
    output wire         s_axi_wready,
    output reg  [1:0]   s_axi_bresp,
    output reg          s_axi_bvalid,
    input  wire         s_axi_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0] s_axi_araddr,
    input  wire [2:0]   s_axi_arprot,
    input  wire         s_axi_arvalid,
    output wire         s_axi_arready,
    output reg  [31:0]  s_axi_rdata,
    output reg  [1:0]   s_axi_rresp,
    output reg          s_axi_rvalid,
    input  wire         s_axi_rready,
    // AXI4-Stream command input
    input  wire [63:0]  s_axis_tdata,
    input  wire         s_axis_tlast,
    input  wire         s_axis_tvalid,
    output wire         s_axis_tready,
    // AXI4-Stream read-data output
    output wire [31:0]  m_axis_tdata,
    output wire         m_axis_tlast,
    output wire         m_axis_tvalid,
    input  wire         m_axis_tready
);
    // Parameter checks at elaboration (the accelerator checks its own).
    generate
        if (!(AXIL_ADDR_WIDTH >= 9 && AXIL_ADDR_WIDTH <= 32)) begin : check_axil_addr_width
            AXIL_ADDR_WIDTH_must_be_9_to_32 parameter_check_failed();
        end
        if (!(FIFO_DEPTH >= 2 && FIFO_DEPTH <= 256 && (FIFO_DEPTH & (FIFO_DEPTH - 1)) == 0)) begin : check_fifo_depth
            FIFO_DEPTH_must_be_a_power_of_2_from_2_to_256 parameter_check_failed();
        end
    endgenerate

    localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10;
    localparam [31:0] ID = 32'h53414301;
    localparam FCW = $clog2(FIFO_DEPTH) + 1;       // FIFO count width

    wire rst = ~aresetn;
    wire busy, done, error;

    // The protection bits carry nothing this slave distinguishes.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [5:0] unused_prot = {s_axi_awprot, s_axi_arprot};
    /* verilator lint_on UNUSEDSIGNAL */

    // ---------------------------------------------------------------- AXI4-Lite slave
    // One transaction at a time: a write (address and data together) or a read, then its
    // response. Accesses that need the host port take it for one cycle (ahead of the stream)
    // and, for reads, wait the port's three cycles of latency.
    localparam [2:0] S_IDLE = 3'd0, S_WR_PORT = 3'd1, S_BRESP = 3'd2, S_RD_PORT = 3'd3,
                     S_RD_WAIT = 3'd4, S_RRESP = 3'd5;
    reg [2:0]  lite_state;
    reg [31:0] host_addr_reg;                      // HOST_ADDR
    reg        irq_enable, irq_status, done_q, start_q;
    reg [31:0] port_addr, port_wdata;              // the access the slave puts on the host port
    reg        port_bump;                          // a HOST_DATA access: HOST_ADDR + 1 after it

    wire aw_take = (lite_state == S_IDLE) && s_axi_awvalid && s_axi_wvalid;
    wire ar_take = (lite_state == S_IDLE) && s_axi_arvalid && !aw_take;
    assign s_axi_awready = aw_take;
    assign s_axi_wready = aw_take;
    assign s_axi_arready = ar_take;

    // address decode of both channels
    function [4:0] decode;                         // {mapped, window, register index 2:0}
        input [AXIL_ADDR_WIDTH-1:0] a;
        begin
            if ({{(32-AXIL_ADDR_WIDTH){1'b0}}, a} >= 32'h100 && {{(32-AXIL_ADDR_WIDTH){1'b0}}, a} < 32'h140)
                decode = 5'b11000;
            else if ({{(32-AXIL_ADDR_WIDTH){1'b0}}, a} < 32'h01C)
                decode = {2'b10, a[4:2]};
            else
                decode = 5'b00000;
        end
    endfunction
    localparam [2:0] A_CONTROL = 3'd0, A_STATUS = 3'd1, A_HOST_ADDR = 3'd2, A_HOST_DATA = 3'd3,
                     A_IRQ_ENABLE = 3'd4, A_IRQ_STATUS = 3'd5, A_ID = 3'd6;
    wire [4:0] wdec = decode(s_axi_awaddr);
    wire [4:0] rdec = decode(s_axi_araddr);
    wire       w_full = (s_axi_wstrb == 4'hF);
    // a write the registers take: mapped, whole word, not a read-only register
    wire       w_ok = wdec[4] && w_full && (wdec[3] || (wdec[2:0] != A_STATUS && wdec[2:0] != A_ID));
    wire       w_port = w_ok && (wdec[3] || wdec[2:0] == A_HOST_DATA);
    wire       r_port = rdec[4] && (rdec[3] || rdec[2:0] == A_HOST_DATA);
    // toggle coverage off: copies of address bits 5:2 (counted at the ports) over tied zeros
    /* verilator coverage_off */
    wire [31:0] window_addr_w = {28'd0, s_axi_awaddr[5:2]};    // region 0, offset n
    wire [31:0] window_addr_r = {28'd0, s_axi_araddr[5:2]};
    /* verilator coverage_on */

    // the host port's read results, tagged by who asked: three cycles from request to data
    reg lite_rd1, lite_rd2, lite_rd3;
    wire lite_port = (lite_state == S_WR_PORT) || (lite_state == S_RD_PORT);

    always @(posedge aclk) begin
        if (rst) begin
            lite_state <= S_IDLE;
            s_axi_bvalid <= 1'b0;
            s_axi_rvalid <= 1'b0;
            s_axi_bresp <= OKAY;
            s_axi_rresp <= OKAY;
            s_axi_rdata <= 32'd0;
            host_addr_reg <= 32'd0;
            irq_enable <= 1'b0;
            irq_status <= 1'b0;
            start_q <= 1'b0;
            port_bump <= 1'b0;
        end else begin
            start_q <= 1'b0;
            if (done && !done_q) irq_status <= 1'b1;
            case (lite_state)
                S_IDLE: begin
                    if (aw_take) begin
                        s_axi_bresp <= w_ok ? OKAY : SLVERR;
                        port_addr <= wdec[3] ? window_addr_w : host_addr_reg;
                        port_wdata <= s_axi_wdata;
                        port_bump <= !wdec[3];
                        if (w_port) begin
                            lite_state <= S_WR_PORT;
                        end else begin
                            lite_state <= S_BRESP;
                            s_axi_bvalid <= 1'b1;
                            if (w_ok) begin
                                case (wdec[2:0])
                                    A_CONTROL: start_q <= s_axi_wdata[0] && !busy;
                                    A_HOST_ADDR: host_addr_reg <= s_axi_wdata;
                                    A_IRQ_ENABLE: irq_enable <= s_axi_wdata[0];
                                    // write 1 to clear; a run ending in this very cycle wins
                                    A_IRQ_STATUS: if (s_axi_wdata[0] && !(done && !done_q)) irq_status <= 1'b0;
                                    // unreachable: w_ok excludes STATUS and ID, w_port takes
                                    // HOST_DATA, and decode maps only indices 0..6
                                    /* verilator coverage_off */
                                    default: ;
                                    /* verilator coverage_on */
                                endcase
                            end
                        end
                    end else if (ar_take) begin
                        port_addr <= rdec[3] ? window_addr_r : host_addr_reg;
                        port_bump <= !rdec[3];
                        s_axi_rresp <= rdec[4] ? OKAY : SLVERR;
                        if (r_port) begin
                            lite_state <= S_RD_PORT;
                        end else begin
                            lite_state <= S_RRESP;
                            s_axi_rvalid <= 1'b1;
                            case (rdec[2:0])
                                A_STATUS: s_axi_rdata <= {29'd0, error, done, busy};
                                A_HOST_ADDR: s_axi_rdata <= host_addr_reg;
                                A_IRQ_ENABLE: s_axi_rdata <= {31'd0, irq_enable};
                                A_IRQ_STATUS: s_axi_rdata <= {31'd0, irq_status};
                                A_ID: s_axi_rdata <= ID;
                                default: s_axi_rdata <= 32'd0;     // CONTROL, unmapped
                            endcase
                        end
                    end
                end
                S_WR_PORT: begin                    // the write is on the host port now
                    if (port_bump) host_addr_reg <= host_addr_reg + 32'd1;
                    lite_state <= S_BRESP;
                    s_axi_bvalid <= 1'b1;
                end
                S_BRESP: if (s_axi_bready) begin
                    s_axi_bvalid <= 1'b0;
                    lite_state <= S_IDLE;
                end
                S_RD_PORT: begin                    // the read is on the host port now
                    if (port_bump) host_addr_reg <= host_addr_reg + 32'd1;
                    lite_state <= S_RD_WAIT;
                end
                S_RD_WAIT: if (lite_rd3) begin
                    s_axi_rdata <= host_rdata;
                    s_axi_rvalid <= 1'b1;
                    lite_state <= S_RRESP;
                end
                S_RRESP: if (s_axi_rready) begin
                    s_axi_rvalid <= 1'b0;
                    lite_state <= S_IDLE;
                end
                // unreachable: lite_state only ever holds the six named states (6, 7 never)
                /* verilator coverage_off */
                default: lite_state <= S_IDLE;
                /* verilator coverage_on */
            endcase
        end
    end
    always @(posedge aclk) done_q <= done;
    assign irq = irq_enable && irq_status;

    // ---------------------------------------------------------------- stream side
    // A command goes onto the host port when the AXI4-Lite slave does not use it, the
    // accelerator is idle (and not being started this very cycle: a write presented then would
    // land after `busy` rose and be dropped), and the FIFO has room for every read already
    // asked for plus this one.
    reg         str_rd1, str_rd2, str_rd3, str_last1, str_last2, str_last3;
    wire [FCW-1:0] fifo_count;
    // toggle coverage off: a 32-bit sum of the FIFO count (counted) and three flags, at most
    // FIFO depth + 3, so its top bits are 0 by construction
    /* verilator coverage_off */
    wire [31:0] reserved = {{(32-FCW){1'b0}}, fifo_count} + {31'd0, str_rd1} + {31'd0, str_rd2}
                         + {31'd0, str_rd3};
    /* verilator coverage_on */
    localparam [31:0] FIFO_ROOM = FIFO_DEPTH;
    assign s_axis_tready = !lite_port && !busy && !start_q && (reserved < FIFO_ROOM);
    wire str_take = s_axis_tvalid && s_axis_tready;
    wire str_read = s_axis_tdata[63];

    always @(posedge aclk) begin
        if (rst) begin
            lite_rd1 <= 1'b0;
            lite_rd2 <= 1'b0;
            lite_rd3 <= 1'b0;
            str_rd1 <= 1'b0;
            str_rd2 <= 1'b0;
            str_rd3 <= 1'b0;
        end else begin
            lite_rd1 <= (lite_state == S_RD_PORT);
            lite_rd2 <= lite_rd1;
            lite_rd3 <= lite_rd2;
            str_rd1 <= str_take && str_read;
            str_rd2 <= str_rd1;
            str_rd3 <= str_rd2;
        end
        str_last1 <= s_axis_tlast;
        str_last2 <= str_last1;
        str_last3 <= str_last2;
    end

    // ---------------------------------------------------------------- host port and accelerator
    wire        host_en = lite_port || str_take;
    wire        host_we = lite_port ? (lite_state == S_WR_PORT) : !str_read;
    wire [31:0] host_addr = lite_port ? port_addr : {1'b0, s_axis_tdata[62:32]};
    wire [31:0] host_wdata = lite_port ? port_wdata : s_axis_tdata[31:0];
    wire [31:0] host_rdata;

    accelerator #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH), .IMEM_DEPTH(IMEM_DEPTH)) u_acc (
        .clk(aclk), .rst(rst), .start(start_q), .busy(busy), .done(done), .error(error),
        .host_en(host_en), .host_we(host_we), .host_addr(host_addr), .host_wdata(host_wdata),
        .host_rdata(host_rdata));

    wire [32:0] fifo_head;
    wire        fifo_empty;
    stream_fifo #(.WIDTH(33), .DEPTH(FIFO_DEPTH), .AW(FCW - 1)) u_read_fifo (
        .clk(aclk), .rst(rst), .push(str_rd3), .push_data({str_last3, host_rdata}),
        .pop(m_axis_tvalid && m_axis_tready), .head(fifo_head), .empty(fifo_empty),
        .count(fifo_count));
    assign m_axis_tvalid = !fifo_empty;
    assign m_axis_tdata = fifo_head[31:0];
    assign m_axis_tlast = fifo_head[32];
endmodule
`default_nettype wire
