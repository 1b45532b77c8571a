`default_nettype none
// Bench wrapper of the accelerator for long simulations (tb/rtl_job.py, the compare job): the
// accelerator, unchanged, plus two bulk paths that take the per-word round trip through Python
// out of a run. It is simulation-only (file I/O, hierarchical references) and never synthesized.
//
// * Bulk load: on `load_go` the wrapper reads `load_count` entries {address[63:32], data[31:0]}
//   from the file load.hex (in the simulator's working directory) and presents them at the
//   accelerator's real host port, one write per cycle, exactly as a host would; `load_busy` is
//   high until the last write has landed. Programs and input tensors go in this way.
// * Dumps: on `dump_go` the wrapper reads entries `dump_lo`..`dump_hi` straight from the
//   memories (a backdoor: the host port is not used, so a dump never changes what the port
//   does); of each 32-bit entry number only the low log2(depth) bits address the buffer.
//   `dump_what` 0 or 1: the data-buffer or partial-sum buffer, one entry of every bank per
//   cycle, one line per entry (all banks, bank 0 in the lowest bits) into dump.hex;
//   `dump_busy` is high until the file is closed. 2: the trace, both memories at once with
//   $writememh into dump_trace_cycle.hex and dump_trace_act.hex, in zero time.
//
// Files are written and read in the simulator's working directory; put it on a RAM disk for
// speed (rewriting a file on a disk mounted with `discard` costs milliseconds).
//
// While no bulk load runs, the host port inputs pass through unchanged, so tb/host_port.py drives
// the accelerator word by word through this wrapper as it does without it. The dumps name the
// accelerator's memory instances (dbank[b].u_ram, rowpipe[r].u_pbuf, u_trace_cycle,
// u_trace_act, all sdp_ram `mem` arrays): renaming one of them in accelerator.v breaks this
// build, which tb/test_accelerator_tb_wrapper.py then reports.
module accelerator_tb_wrapper #(
    parameter ROWS = 8,
    parameter COLS = 8,
    parameter CMAX = 64,
    parameter DDEPTH = 1024,
    parameter PDEPTH = 1024,
    parameter WDEPTH = 512,
    parameter BDEPTH = 512,
    parameter SDEPTH = 64,
    parameter IMEM_DEPTH = 256,
    parameter LOAD_DEPTH = 65536        // entries of one bulk load (longer ones come in parts)
) (
    input  wire         clk,
    input  wire         rst,
    input  wire         start,
    output wire         busy,
    output wire         done,
    output wire         error,
    // host port, passed through while no bulk load runs
    input  wire         host_en,
    input  wire         host_we,
    input  wire [31:0]  host_addr,
    input  wire [31:0]  host_wdata,
    output wire [31:0]  host_rdata,
    // bulk load
    input  wire         load_go,
    input  wire [31:0]  load_count,
    output wire         load_busy,
    // dumps
    input  wire         dump_go,
    input  wire [1:0]   dump_what,
    input  wire [31:0]  dump_lo,
    input  wire [31:0]  dump_hi,
    output wire         dump_busy
);
    // Parameter checks at elaboration (the accelerator checks its own).
    generate
        if (!(LOAD_DEPTH >= 2 && LOAD_DEPTH <= (1 << 24))) begin : check_load_depth
            LOAD_DEPTH_must_be_2_to_2_pow_24 parameter_check_failed();
        end
    endgenerate

    localparam [1:0] D_DBUF = 2'd0, D_PBUF = 2'd1, D_TRACE = 2'd2;
    localparam LAW = $clog2(LOAD_DEPTH);          // stage address
    localparam LCW = $clog2(LOAD_DEPTH + 1);      // stage count (0..LOAD_DEPTH)

    // ---------------------------------------------------------------- bulk load
    reg [63:0]   stage [0:LOAD_DEPTH-1];
    reg [LCW-1:0] load_n, load_i;
    reg          loading, draining;       // presenting writes; waiting for the last to land
    reg          drain;
    reg          dma_en;
    reg [31:0]   dma_addr, dma_wdata;
    always @(posedge clk) begin
        if (rst) begin
            loading <= 1'b0;
            draining <= 1'b0;
            dma_en <= 1'b0;
        end else if (load_go && !loading && !draining) begin
            // the entries are read when the request arrives; a count outside 1..LOAD_DEPTH
            // loads nothing (the Python side splits long loads)
            if (load_count >= 32'd1 && load_count <= LOAD_DEPTH) begin
                $readmemh("load.hex", stage, 0, load_count - 32'd1);
                load_n <= load_count[LCW-1:0];
                load_i <= {LCW{1'b0}};
                loading <= 1'b1;
            end
        end else if (loading) begin
            dma_en <= 1'b1;
            dma_addr <= stage[load_i[LAW-1:0]][63:32];
            dma_wdata <= stage[load_i[LAW-1:0]][31:0];
            load_i <= load_i + 1'b1;
            if (load_i + 1'b1 == load_n) begin
                loading <= 1'b0;
                draining <= 1'b1;
                drain <= 1'b1;
            end
        end else if (draining) begin
            // the port registers its inputs: the last write lands two edges after it is shown
            dma_en <= 1'b0;
            drain <= 1'b0;
            if (!drain) draining <= 1'b0;
        end
    end
    assign load_busy = loading | draining;
    wire dma = loading | draining;

    accelerator #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH), .IMEM_DEPTH(IMEM_DEPTH)) u_acc (
        .clk(clk), .rst(rst), .start(start), .busy(busy), .done(done), .error(error),
        .host_en(dma ? dma_en : host_en), .host_we(dma ? dma_en : host_we),
        .host_addr(dma ? dma_addr : host_addr), .host_wdata(dma ? dma_wdata : host_wdata),
        .host_rdata(host_rdata));

    // ---------------------------------------------------------------- dumps
    // Data and partial-sum buffers: one line per entry holding that entry of every bank
    // (bank 0 in the lowest bits), one entry per cycle, into dump.hex; the trace: both
    // memories at once with $writememh.
    localparam DAW = $clog2(DDEPTH);
    localparam PAW = $clog2(PDEPTH);
    reg        dumping, dump_valid;
    reg [1:0]  dump_kind;
    reg [31:0] dump_addr, dump_end;
    integer    dump_fd;
    wire [CMAX*8-1:0]  dbuf_line;
    wire [ROWS*32-1:0] pbuf_line;
    wire dump_dbuf = dumping && dump_kind == D_DBUF;
    wire dump_pbuf = dumping && dump_kind == D_PBUF;
    genvar gi;
    generate
        for (gi = 0; gi < CMAX; gi = gi + 1) begin : dump_dbuf_bank
            reg [7:0] q;
            always @(posedge clk)
                if (dump_dbuf) q <= u_acc.dbank[gi].u_ram.mem[dump_addr[DAW-1:0]];
            assign dbuf_line[gi*8 +: 8] = q;
        end
        for (gi = 0; gi < ROWS; gi = gi + 1) begin : dump_pbuf_row
            reg [31:0] q;
            always @(posedge clk)
                if (dump_pbuf) q <= u_acc.rowpipe[gi].u_pbuf.mem[dump_addr[PAW-1:0]];
            assign pbuf_line[gi*32 +: 32] = q;
        end
    endgenerate
    always @(posedge clk) begin
        if (rst) begin
            dumping <= 1'b0;
            dump_valid <= 1'b0;
        end else if (dump_go && !dumping && !dump_valid) begin
            if (dump_what == D_TRACE) begin
                $writememh("dump_trace_cycle.hex", u_acc.u_trace_cycle.mem, dump_lo, dump_hi);
                $writememh("dump_trace_act.hex", u_acc.u_trace_act.mem, dump_lo, dump_hi);
            end else begin
                dump_fd <= $fopen("dump.hex", "w");
                dumping <= 1'b1;
                dump_kind <= dump_what;
                dump_addr <= dump_lo;
                dump_end <= dump_hi;
            end
        end else begin
            // the banks' registers hold entry dump_addr - 1: write it, then step
            if (dump_valid) begin
                if (dump_kind == D_DBUF) $fwrite(dump_fd, "%h\n", dbuf_line);
                else $fwrite(dump_fd, "%h\n", pbuf_line);
                if (!dumping) $fclose(dump_fd);
            end
            dump_valid <= dumping;
            if (dumping) begin
                dump_addr <= dump_addr + 32'd1;
                if (dump_addr == dump_end) dumping <= 1'b0;
            end
        end
    end
    assign dump_busy = dumping | dump_valid;
endmodule
`default_nettype wire
