// Formal properties of rtl/accelerator_axi.v (read with yosys `read_verilog -formal -sv`; the RTL
// itself is read as plain Verilog-2005 and never edited). Jobs: formal/jobs.toml.
//
// The accelerator inside is formal/accelerator_host_model.v: its busy, done, error and host-port
// read data are free in every cycle, so what is proven here holds whatever the accelerator does;
// rtl/stream_fifo.v is the real FIFO (its own properties: stream_fifo_props.sv).
//
// Assumed of the masters (the AXI rules for the other side, nothing more): no VALID while
// aresetn is low; an AXI4-Lite VALID (AW, W, AR) stays up with its payload unchanged until its
// READY; the s_axis master holds TVALID, TDATA and TLAST until TREADY. BREADY, RREADY and
// m_axis' TREADY are free.
//
// Proven, from reset on, for every input sequence:
//   AXI4-Lite (the AXI rules of a slave, then what rtl/accelerator_axi.v and
//   docs/microarchitecture.md, "AXI top", say of this one):
//   - no BVALID, RVALID (nor m_axis TVALID) in a cycle that follows a reset cycle;
//   - BVALID stays up with BRESP unchanged until BREADY; RVALID with RDATA and RRESP until RREADY;
//   - one response per accepted request: a write is accepted with AW and W in the same cycle
//     (AWREADY = WREADY, both only with AWVALID and WVALID), a BVALID only while one write is
//     answered, an RVALID only while one read is; one transaction at a time (no READY while one
//     is open), and every request is answered: BVALID within 2 cycles of the write's
//     acceptance, RVALID within 4 of the read's (a host-port access takes the port for a cycle
//     and reads wait its two cycles of latency);
//   - an idle slave takes what is offered in the same cycle: a write when AWVALID and WVALID,
//     else a read when ARVALID (a write wins when both are offered);
//   - BRESP is SLVERR exactly for a write with strobes other than 4'hF, to STATUS or ID, or to
//     an unmapped address, OKAY otherwise; RRESP is SLVERR exactly for an unmapped address, with
//     RDATA 0; a read of ID returns 0x53414301.
//   - a read through the host port (the window, HOST_DATA) returns what the port gave two
//     cycles after the cycle that follows the read's acceptance (it takes the port then), and
//     its RVALID comes 4 cycles after the acceptance.
//   The registers and the interrupt (docs/microarchitecture.md, "AXI4-Lite registers"), against a
//   reference model of HOST_ADDR, IRQ_ENABLE and IRQ_STATUS in this wrapper:
//   - `irq` is IRQ_ENABLE and IRQ_STATUS in every cycle; IRQ_STATUS is set in the cycle after
//     `done` rises, cleared after a write of 1 to it, and a rise in the cycle of that write
//     wins; IRQ_ENABLE takes bit 0 of a write;
//   - the accelerator's start input is high exactly in the cycle after the acceptance of a
//     CONTROL write with bit 0 set while busy was low, low in every other cycle;
//   - reads return, as of the cycle of their acceptance: CONTROL 0; STATUS {error, done, busy};
//     HOST_ADDR its value; IRQ_ENABLE and IRQ_STATUS their bit 0 (bits 31:1 zero);
//   - HOST_ADDR takes a write; a HOST_DATA access (read or write) steps it by 1, a window access
//     does not;
//   - the host port is enabled exactly in the cycle after the acceptance of a window or
//     HOST_DATA access (the slave's, with no stream command then) and in the cycles a stream
//     command is taken; in the slave's cycle it carries the access's write enable, its address
//     (HOST_ADDR before the step, or n for the window's 0x100 + 4n: region 0) and a write's
//     data;
//   - a write answered SLVERR changes nothing: no register, no start, no host-port access.
//   AXI4-Stream:
//   - m_axis: TVALID stays up with TDATA and TLAST unchanged until TREADY;
//   - m_axis carries exactly one beat per read command taken on s_axis, in order, with the
//     command's TLAST and, as TDATA, what the host port returned three cycles after the command
//     was put on it (a reference queue in this wrapper); TVALID is up whenever a result is
//     waiting, and the read results in flight never exceed FIFO_DEPTH (none is lost);
//   - s_axis takes no command while the accelerator is busy, and a command it takes is on the
//     host port in that cycle: a read or a write (bit 63), the address of bits 62:32, a write's
//     data of bits 31:0.
// Covers: a read answered, a write answered, a SLVERR, a read through the host port, a command
// taken on s_axis and a beat leaving on m_axis (with TLAST), a stall on m_axis; irq raised, irq
// cleared by a W1C write, a start issued, a start ignored while busy, a HOST_ADDR read showing
// the step of a HOST_DATA access.
`default_nettype none
module accelerator_axi_props #(
    parameter FIFO_DEPTH = 2,       // m_axis FIFO entries: the module's smallest (2) keeps the
                                    // reference queue short; the reservation logic is the same
                                    // for any depth (a power of two)
    parameter AXIL_ADDR_WIDTH = 9   // the module's smallest: the register map needs 9 bits
) (
    input wire                       aclk,
    input wire                       aresetn,
    input wire [AXIL_ADDR_WIDTH-1:0] s_axi_awaddr,
    input wire [2:0]                 s_axi_awprot,
    input wire                       s_axi_awvalid,
    input wire [31:0]                s_axi_wdata,
    input wire [3:0]                 s_axi_wstrb,
    input wire                       s_axi_wvalid,
    input wire                       s_axi_bready,
    input wire [AXIL_ADDR_WIDTH-1:0] s_axi_araddr,
    input wire [2:0]                 s_axi_arprot,
    input wire                       s_axi_arvalid,
    input wire                       s_axi_rready,
    input wire [63:0]                s_axis_tdata,
    input wire                       s_axis_tlast,
    input wire                       s_axis_tvalid,
    input wire                       m_axis_tready
);
    localparam AW = AXIL_ADDR_WIDTH;
    localparam FAW = $clog2(FIFO_DEPTH);
    localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10;

    wire        irq, s_axi_awready, s_axi_wready, s_axi_arready, s_axis_tready;
    wire        s_axi_bvalid, s_axi_rvalid, m_axis_tvalid, m_axis_tlast;
    wire [1:0]  s_axi_bresp, s_axi_rresp;
    wire [31:0] s_axi_rdata, m_axis_tdata;
    accelerator_axi #(.AXIL_ADDR_WIDTH(AW), .FIFO_DEPTH(FIFO_DEPTH)) dut (
        .aclk(aclk), .aresetn(aresetn), .irq(irq),
        .s_axi_awaddr(s_axi_awaddr), .s_axi_awprot(s_axi_awprot), .s_axi_awvalid(s_axi_awvalid),
        .s_axi_awready(s_axi_awready), .s_axi_wdata(s_axi_wdata), .s_axi_wstrb(s_axi_wstrb),
        .s_axi_wvalid(s_axi_wvalid), .s_axi_wready(s_axi_wready), .s_axi_bresp(s_axi_bresp),
        .s_axi_bvalid(s_axi_bvalid), .s_axi_bready(s_axi_bready), .s_axi_araddr(s_axi_araddr),
        .s_axi_arprot(s_axi_arprot), .s_axi_arvalid(s_axi_arvalid), .s_axi_arready(s_axi_arready),
        .s_axi_rdata(s_axi_rdata), .s_axi_rresp(s_axi_rresp), .s_axi_rvalid(s_axi_rvalid),
        .s_axi_rready(s_axi_rready), .s_axis_tdata(s_axis_tdata), .s_axis_tlast(s_axis_tlast),
        .s_axis_tvalid(s_axis_tvalid), .s_axis_tready(s_axis_tready), .m_axis_tdata(m_axis_tdata),
        .m_axis_tlast(m_axis_tlast), .m_axis_tvalid(m_axis_tvalid), .m_axis_tready(m_axis_tready));

    // The accelerator's side of the host port and its busy flag, as the AXI top sees them:
    // driven by the job's script after `flatten` (formal/jobs.toml: `probes`).
    (* keep *) wire [31:0] p_host_rdata;    // dut.host_rdata: the port's read data
    (* keep *) wire        p_busy;          // dut.busy
    (* keep *) wire        p_host_en, p_host_we;        // dut.host_en, dut.host_we
    (* keep *) wire [31:0] p_host_addr, p_host_wdata;   // dut.host_addr, dut.host_wdata

    // ---- reset: the first cycle resets; aresetn stays free afterwards ----
    reg started = 1'b0;
    always @(posedge aclk) started <= 1'b1;
    always @(*) if (!started) assume(!aresetn);
    reg q_rst = 1'b1;                       // the cycle before was a reset cycle
    always @(posedge aclk) q_rst <= !aresetn;
    wire live = aresetn && !q_rst;          // out of reset, and so was the cycle before

    // ---- what was on the buses in the cycle before (for the hold rules) ----
    reg          q_aw_wait, q_w_wait, q_ar_wait, q_s_wait, q_b_wait, q_r_wait, q_m_wait;
    reg [AW-1:0] q_awaddr, q_araddr;
    reg [2:0]    q_awprot, q_arprot;
    reg [31:0]   q_wdata, q_rdata, q_mdata;
    reg [3:0]    q_wstrb;
    reg [63:0]   q_sdata;
    reg          q_slast, q_mlast;
    reg [1:0]    q_bresp, q_rresp;
    always @(posedge aclk) begin
        q_aw_wait <= s_axi_awvalid && !s_axi_awready;
        q_w_wait <= s_axi_wvalid && !s_axi_wready;
        q_ar_wait <= s_axi_arvalid && !s_axi_arready;
        q_s_wait <= s_axis_tvalid && !s_axis_tready;
        q_b_wait <= s_axi_bvalid && !s_axi_bready;
        q_r_wait <= s_axi_rvalid && !s_axi_rready;
        q_m_wait <= m_axis_tvalid && !m_axis_tready;
        q_awaddr <= s_axi_awaddr;
        q_awprot <= s_axi_awprot;
        q_araddr <= s_axi_araddr;
        q_arprot <= s_axi_arprot;
        q_wdata <= s_axi_wdata;
        q_wstrb <= s_axi_wstrb;
        q_sdata <= s_axis_tdata;
        q_slast <= s_axis_tlast;
        q_bresp <= s_axi_bresp;
        q_rresp <= s_axi_rresp;
        q_rdata <= s_axi_rdata;
        q_mdata <= m_axis_tdata;
        q_mlast <= m_axis_tlast;
    end

    // ---- the masters: the AXI rules for the other side ----
    always @(*) begin
        if (!aresetn) assume(!s_axi_awvalid && !s_axi_wvalid && !s_axi_arvalid && !s_axis_tvalid);
        if (live) begin
            if (q_aw_wait) assume(s_axi_awvalid && s_axi_awaddr == q_awaddr && s_axi_awprot == q_awprot);
            if (q_w_wait) assume(s_axi_wvalid && s_axi_wdata == q_wdata && s_axi_wstrb == q_wstrb);
            if (q_ar_wait) assume(s_axi_arvalid && s_axi_araddr == q_araddr && s_axi_arprot == q_arprot);
            if (q_s_wait) assume(s_axis_tvalid && s_axis_tdata == q_sdata && s_axis_tlast == q_slast);
        end
    end

    // ---- the register map, from docs/microarchitecture.md ("AXI4-Lite registers") ----
    // 32-bit registers at word indexes 0..6 (0x000..0x018), the window at 0x100..0x13F; the low
    // two address bits select no byte (whole-word registers)
    function mapped;
        input [AW-1:0] a;
        mapped = ({{(32-AW){1'b0}}, a} < 32'h01C)
              || ({{(32-AW){1'b0}}, a} >= 32'h100 && {{(32-AW){1'b0}}, a} < 32'h140);
    endfunction
    function read_only;                     // STATUS (0x004) and ID (0x018)
        input [AW-1:0] a;
        read_only = ({{(32-AW){1'b0}}, a} < 32'h01C) && (a[4:2] == 3'd1 || a[4:2] == 3'd6);
    endfunction
    wire [1:0] want_bresp = (mapped(s_axi_awaddr) && s_axi_wstrb == 4'hF && !read_only(s_axi_awaddr))
                            ? OKAY : SLVERR;
    wire [1:0] want_rresp = mapped(s_axi_araddr) ? OKAY : SLVERR;
    wire       reads_id = {{(32-AW){1'b0}}, s_axi_araddr} < 32'h01C && s_axi_araddr[4:2] == 3'd6;
    // the window and HOST_DATA (0x00C) are host-port accesses
    wire       reads_port = ({{(32-AW){1'b0}}, s_axi_araddr} >= 32'h100 && {{(32-AW){1'b0}}, s_axi_araddr} < 32'h140)
                         || ({{(32-AW){1'b0}}, s_axi_araddr} < 32'h01C && s_axi_araddr[4:2] == 3'd3);

    // ---- AXI4-Lite: the open transaction ----
    wire aw_hs = s_axi_awvalid && s_axi_awready;
    wire ar_hs = s_axi_arvalid && s_axi_arready;
    wire b_hs = s_axi_bvalid && s_axi_bready;
    wire r_hs = s_axi_rvalid && s_axi_rready;
    reg       b_open = 1'b0, r_open = 1'b0;  // a write (read) accepted and not yet answered
    reg [1:0] b_age;                         // cycles since its acceptance - 1 without a VALID
    reg [2:0] r_age;
    reg [1:0] b_want, r_want;                // the response it must get
    reg       r_id;                          // it reads ID
    reg       r_port;                        // it reads through the host port
    reg [31:0] r_port_data;                  // what the port returned for it
    always @(posedge aclk) begin
        if (!aresetn) begin
            b_open <= 1'b0;
            r_open <= 1'b0;
        end else begin
            if (b_hs) b_open <= 1'b0;
            else if (b_open && !s_axi_bvalid && b_age != 2'd3) b_age <= b_age + 2'd1;
            if (r_hs) r_open <= 1'b0;
            else if (r_open && !s_axi_rvalid && r_age != 3'd7) r_age <= r_age + 3'd1;
            // the port is read in the cycle after the acceptance (r_age 0), its data is
            // there three cycles later (r_age 3)
            if (r_open && r_age == 3'd3) r_port_data <= p_host_rdata;
            if (aw_hs) begin
                b_open <= 1'b1;
                b_age <= 2'd0;
                b_want <= want_bresp;
            end
            if (ar_hs) begin
                r_open <= 1'b1;
                r_age <= 3'd0;
                r_want <= want_rresp;
                r_id <= reads_id;
                r_port <= reads_port;
            end
        end
    end

    always @(*) if (started && q_rst) assert(!s_axi_bvalid && !s_axi_rvalid && !m_axis_tvalid);
    always @(*) if (live) begin
        // VALID held, payload stable, until READY
        if (q_b_wait) assert(s_axi_bvalid && s_axi_bresp == q_bresp);
        if (q_r_wait) assert(s_axi_rvalid && s_axi_rdata == q_rdata && s_axi_rresp == q_rresp);
        // one response per request, one transaction at a time
        if (s_axi_bvalid) assert(b_open);
        if (s_axi_rvalid) assert(r_open);
        assert(!(b_open && r_open));
        if (s_axi_awready || s_axi_arready) assert(!b_open && !r_open);
        // the write channels together; a write wins over a read
        assert(s_axi_awready == s_axi_wready);
        if (s_axi_awready) assert(s_axi_awvalid && s_axi_wvalid);
        if (s_axi_arready) assert(s_axi_arvalid && !(s_axi_awvalid && s_axi_wvalid));
        if (!b_open && !r_open) begin
            if (s_axi_awvalid && s_axi_wvalid) assert(s_axi_awready);
            else if (s_axi_arvalid) assert(s_axi_arready);
        end
        // every request answered in time
        if (b_open && !s_axi_bvalid) assert(b_age == 2'd0);
        if (r_open && !s_axi_rvalid) assert(r_age <= 3'd3);
        // the responses of the register map
        if (s_axi_bvalid) assert(s_axi_bresp == b_want);
        if (s_axi_rvalid) begin
            assert(s_axi_rresp == r_want);
            if (r_want == SLVERR) assert(s_axi_rdata == 32'd0);
            if (r_id) assert(s_axi_rdata == 32'h53414301);
            if (r_port) assert(s_axi_rdata == r_port_data && r_age == 3'd4);
        end
    end

    // ---- AXI4-Stream: the reference queue of read results ----
    // A read command taken on s_axis is on the host port in the same cycle; its data is on
    // host_rdata three cycles later (the port's documented latency), and goes into the queue
    // with the command's TLAST.
    wire s_hs = s_axis_tvalid && s_axis_tready;
    wire m_hs = m_axis_tvalid && m_axis_tready;
    reg  rd1 = 1'b0, rd2 = 1'b0, rd3 = 1'b0, last1, last2, last3;
    always @(posedge aclk) begin
        rd1 <= aresetn && s_hs && s_axis_tdata[63];
        rd2 <= aresetn && rd1;
        rd3 <= aresetn && rd2;
        last1 <= s_axis_tlast;
        last2 <= last1;
        last3 <= last2;
    end
    reg [32:0]  q [0:FIFO_DEPTH-1];         // {TLAST, TDATA} of the results waiting, oldest first
    reg [FAW:0] q_n = 0;
    integer i;
    always @(posedge aclk) begin
        if (!aresetn) q_n <= 0;
        else begin
            if (m_hs) begin
                for (i = 0; i < FIFO_DEPTH - 1; i = i + 1) q[i] <= q[i + 1];
            end
            if (rd3) q[q_n - m_hs] <= {last3, p_host_rdata};
            q_n <= q_n + rd3 - m_hs;
        end
    end
    always @(*) if (live) begin
        // TVALID held, TDATA and TLAST stable, until TREADY
        if (q_m_wait) assert(m_axis_tvalid && m_axis_tdata == q_mdata && m_axis_tlast == q_mlast);
        // one beat per read command, in order, with its data and TLAST; nothing lost
        assert({1'b0, q_n} + rd1 + rd2 + rd3 <= FIFO_DEPTH);
        assert(m_axis_tvalid == (q_n != 0));
        if (m_axis_tvalid) assert({m_axis_tlast, m_axis_tdata} == q[0]);
        // commands wait while the accelerator runs
        if (s_axis_tready) assert(!p_busy);
        // a command taken is on the host port in that cycle, as the stream format says: bit 63
        // read, bits 62:32 the address (bit 31 0), bits 31:0 the data of a write
        if (s_hs) begin
            assert(p_host_en && p_host_we == !s_axis_tdata[63]);
            assert(p_host_addr == {1'b0, s_axis_tdata[62:32]});
            if (!s_axis_tdata[63]) assert(p_host_wdata == s_axis_tdata[31:0]);
        end
    end

    // ---- the control registers and the interrupt: a reference model ----
    // Written from docs/microarchitecture.md ("AXI4-Lite registers") and the register table of
    // rtl/accelerator_axi.v's header, not from its code: HOST_ADDR, IRQ_ENABLE, IRQ_STATUS and
    // the start they imply, changed only by writes the slave answers OKAY (a refused write
    // changes nothing) and by HOST_DATA accesses (HOST_ADDR + 1) and `done` rising (IRQ_STATUS).
    (* keep *) wire p_done, p_error;        // dut.done, dut.error: the accelerator's status
    (* keep *) wire p_start;                // dut.u_acc.start: the accelerator's start input
    localparam [2:0] R_CONTROL = 3'd0, R_STATUS = 3'd1, R_HOST_ADDR = 3'd2, R_HOST_DATA = 3'd3,
                     R_IRQ_ENABLE = 3'd4, R_IRQ_STATUS = 3'd5;
    function is_reg;                        // a register's word (0x000..0x018) of index idx
        input [AW-1:0] a;
        input [2:0]    idx;
        is_reg = ({{(32-AW){1'b0}}, a} < 32'h01C) && a[4:2] == idx;
    endfunction
    function in_window;                     // 0x100 + 4n, n = 0..15
        input [AW-1:0] a;
        in_window = {{(32-AW){1'b0}}, a} >= 32'h100 && {{(32-AW){1'b0}}, a} < 32'h140;
    endfunction
    function [31:0] window_n;               // the window's n: host-port address n (region 0)
        input [AW-1:0] a;
        window_n = ({{(32-AW){1'b0}}, a} - 32'h100) >> 2;
    endfunction
    reg        ref_done_q;                  // `done` in the cycle before: a rise is 0 then 1
    reg [31:0] ref_host_addr;               // HOST_ADDR
    reg        ref_irq_enable, ref_irq_status;
    reg        ref_start;                   // the accelerator must see start now
    reg        ref_stepped;                 // HOST_ADDR holds a step's value (for a cover)
    reg        port1;                       // the cycle after a port access's acceptance: the
    reg        port1_we, port1_bump;        // slave holds the port now, with this access
    reg [31:0] port1_addr, port1_wdata;
    wire w_taken = aresetn && aw_hs && want_bresp == OKAY;     // a write the map takes
    wire w_data  = w_taken && is_reg(s_axi_awaddr, R_HOST_DATA);
    wire r_data  = aresetn && ar_hs && is_reg(s_axi_araddr, R_HOST_DATA);
    // an access that takes the host port: a window or HOST_DATA read, or such a write that the
    // map takes (OKAY)
    wire to_port = (w_taken && (in_window(s_axi_awaddr) || w_data))
                || (aresetn && ar_hs && (in_window(s_axi_araddr) || r_data));
    wire done_rise = p_done && !ref_done_q;
    wire clear_irq = w_taken && is_reg(s_axi_awaddr, R_IRQ_STATUS) && s_axi_wdata[0];
    always @(posedge aclk) begin
        ref_done_q <= p_done;
        if (!aresetn) begin
            ref_host_addr <= 32'd0;
            ref_irq_enable <= 1'b0;
            ref_irq_status <= 1'b0;
            ref_start <= 1'b0;
            ref_stepped <= 1'b0;
            port1 <= 1'b0;
        end else begin
            // CONTROL bit 0 starts the accelerator, in the next cycle, unless it is busy
            ref_start <= w_taken && is_reg(s_axi_awaddr, R_CONTROL) && s_axi_wdata[0] && !p_busy;
            if (w_taken && is_reg(s_axi_awaddr, R_HOST_ADDR)) begin
                ref_host_addr <= s_axi_wdata;
                ref_stepped <= 1'b0;
            end
            // the access uses HOST_ADDR as it is (port1_addr), then HOST_ADDR steps by 1
            if (w_data || r_data) begin
                ref_host_addr <= ref_host_addr + 32'd1;
                ref_stepped <= 1'b1;
            end
            if (w_taken && is_reg(s_axi_awaddr, R_IRQ_ENABLE)) ref_irq_enable <= s_axi_wdata[0];
            // a run ending in the cycle of the clearing write wins over the write
            if (done_rise) ref_irq_status <= 1'b1;
            else if (clear_irq) ref_irq_status <= 1'b0;
            port1 <= to_port;
        end
        port1_we <= aw_hs;
        port1_bump <= w_data || r_data;
        port1_addr <= aw_hs ? (in_window(s_axi_awaddr) ? window_n(s_axi_awaddr) : ref_host_addr)
                            : (in_window(s_axi_araddr) ? window_n(s_axi_araddr) : ref_host_addr);
        port1_wdata <= s_axi_wdata;
    end
    // what a register read must return, as the register was in the cycle of the acceptance
    reg        r_reg;                       // it reads CONTROL, STATUS, HOST_ADDR or an IRQ one
    reg [31:0] r_reg_data;
    reg        r_ha_stepped;                // it reads HOST_ADDR after a HOST_DATA access
    always @(posedge aclk) if (ar_hs) begin
        r_reg <= 1'b1;
        r_ha_stepped <= 1'b0;
        if (is_reg(s_axi_araddr, R_CONTROL)) r_reg_data <= 32'd0;
        else if (is_reg(s_axi_araddr, R_STATUS)) r_reg_data <= {29'd0, p_error, p_done, p_busy};
        else if (is_reg(s_axi_araddr, R_HOST_ADDR)) begin
            r_reg_data <= ref_host_addr;
            r_ha_stepped <= ref_stepped;
        end
        else if (is_reg(s_axi_araddr, R_IRQ_ENABLE)) r_reg_data <= {31'd0, ref_irq_enable};
        else if (is_reg(s_axi_araddr, R_IRQ_STATUS)) r_reg_data <= {31'd0, ref_irq_status};
        else r_reg <= 1'b0;
    end
    // from the cycle after the first on (the registers have no initial value before the
    // reset), reset cycles included: the reference resets with the registers
    always @(*) if (started) begin
        assert(irq == (ref_irq_enable && ref_irq_status));
        assert(p_start == ref_start);
        // the port is the slave's alone in its cycle (no stream command then), and only then
        // or with a stream command; a refused write never reaches it
        assert(p_host_en == (port1 || s_hs));
        if (port1) begin
            assert(!s_axis_tready);
            assert(p_host_we == port1_we && p_host_addr == port1_addr);
            if (port1_we) assert(p_host_wdata == port1_wdata);
        end
    end
    always @(*) if (live && s_axi_rvalid && r_reg) assert(s_axi_rdata == r_reg_data);

    // ---- induction strengthening: the AXI top's state, as the claims above need it ----
    // Probes (formal/jobs.toml) of the slave's state, the host-port read pipeline and the FIFO;
    // they only make the claims provable without bounds.
    (* keep *) wire [2:0]   p_state;        // dut.lite_state
    (* keep *) wire         p_lite_rd1, p_lite_rd2, p_lite_rd3, p_str_rd1, p_str_rd2, p_str_rd3;
    (* keep *) wire         p_str_last1, p_str_last2, p_str_last3;
    (* keep *) wire [FAW:0] p_n;            // dut.u_read_fifo.n
    (* keep *) wire [FAW-1:0] p_rd, p_wr;   // dut.u_read_fifo.rd, .wr
    (* keep *) wire [33*FIFO_DEPTH-1:0] p_mem;  // {mem[FIFO_DEPTH-1], ..., mem[0]}
    (* keep *) wire         p_irq_enable, p_irq_status, p_done_q, p_port_bump;
    (* keep *) wire [31:0]  p_host_addr_reg;    // dut.host_addr_reg: HOST_ADDR
    localparam [2:0] S_IDLE = 3'd0, S_WR_PORT = 3'd1, S_BRESP = 3'd2, S_RD_PORT = 3'd3,
                     S_RD_WAIT = 3'd4, S_RRESP = 3'd5;
    integer j;
    reg [FAW-1:0] at;                       // where the queue's entry j is in the FIFO
    always @(*) if (live) begin
        assert(p_state <= S_RRESP);
        assert(b_open == (p_state == S_WR_PORT || p_state == S_BRESP));
        assert(r_open == (p_state == S_RD_PORT || p_state == S_RD_WAIT || p_state == S_RRESP));
        assert(s_axi_bvalid == (p_state == S_BRESP));
        assert(s_axi_rvalid == (p_state == S_RRESP));
        if (b_open) assert(s_axi_bresp == b_want);
        if (r_open) assert(s_axi_rresp == r_want);
        if (p_state == S_WR_PORT) assert(b_age == 2'd0);
        if (p_state == S_RD_PORT)
            assert(r_age == 3'd0 && !p_lite_rd1 && !p_lite_rd2 && !p_lite_rd3 && r_port);
        if (r_open && !r_port) assert(p_state == S_RRESP);
        if (p_state == S_RD_WAIT) assert((r_age == 3'd1 && p_lite_rd1 && !p_lite_rd2 && !p_lite_rd3)
                                      || (r_age == 3'd2 && !p_lite_rd1 && p_lite_rd2 && !p_lite_rd3)
                                      || (r_age == 3'd3 && !p_lite_rd1 && !p_lite_rd2 && p_lite_rd3));
        if (p_state != S_RD_WAIT) assert(!p_lite_rd1 && !p_lite_rd2 && !p_lite_rd3);
        assert(p_str_rd1 == rd1 && p_str_rd2 == rd2 && p_str_rd3 == rd3);
        if (rd1) assert(p_str_last1 == last1);
        if (rd2) assert(p_str_last2 == last2);
        if (rd3) assert(p_str_last3 == last3);
        assert(p_n == q_n);
        assert(p_wr - p_rd == p_n[FAW-1:0]);
    end
    // the registers behind the reference model: HOST_ADDR is one short of the reference while
    // a HOST_DATA access holds the port (the reference steps at the acceptance)
    always @(*) if (started) begin
        assert(p_done_q == ref_done_q);
        assert(p_irq_enable == ref_irq_enable && p_irq_status == ref_irq_status);
        assert(port1 == (p_state == S_WR_PORT || p_state == S_RD_PORT));
        if (port1) assert(p_port_bump == port1_bump);
        assert(p_host_addr_reg + {31'd0, port1 && port1_bump} == ref_host_addr);
    end
    always @(*)
        for (j = 0; j < FIFO_DEPTH; j = j + 1) begin
            at = p_rd + j;
            if (live && j < q_n) assert(p_mem[33 * at +: 33] == q[j]);
        end

    // ---- covers: the properties are not vacuous ----
    reg q_irq, q_clear_irq;                 // irq and a clearing write in the cycle before
    always @(posedge aclk) begin
        q_irq <= irq;
        q_clear_irq <= clear_irq;
    end
    always @(*) if (live) begin
        cover(r_hs && r_want == OKAY);                      // a read answered
        cover(b_hs && b_want == OKAY);                      // a write answered
        cover(b_hs && b_want == SLVERR);                    // a refused write
        cover(r_hs && r_age == 3'd4);                       // a read through the host port
        cover(s_hs && !s_axis_tdata[63]);                   // a write command taken
        cover(m_hs && m_axis_tlast);                        // a read result leaves, with TLAST
        cover(q_m_wait && m_hs);                            // after a stall on m_axis
        cover(irq && !q_irq);                               // irq raised
        cover(q_irq && !irq && q_clear_irq);                // irq cleared by a W1C write
        cover(p_start);                                     // a start issued
        cover(w_taken && is_reg(s_axi_awaddr, R_CONTROL) && s_axi_wdata[0] && p_busy);
                                                            // a start ignored: busy
        cover(r_hs && r_ha_stepped);                        // HOST_ADDR read after a step
    end
endmodule
`default_nettype wire
