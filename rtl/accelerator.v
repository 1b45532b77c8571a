`default_nettype none
// SAC accelerator top: instruction memory, weight/bias/shift memories, data buffer (one bank per
// channel), partial-sum buffer (one bank per array row), the decoder, the feeder, the systolic
// array, per-row ReLU & quantization and output accumulators, a cycle counter, an activity
// counter and a per-instruction trace.
//
// Host port (docs/microarchitecture.md): while not busy, the host reads and writes every memory
// through one 32-bit port, `host_addr[31:28]` selecting the region. The port's inputs go
// into registers first (the address and data as they are, a write's decision through its
// compares; no output depends combinationally on a top-level input), so a write presented
// while `busy` is low lands at the second clock edge after it is presented and read
// data appear on `host_rdata` three cycles after `host_en` (the memories' data wait a cycle in
// a register after each block RAM, see the host read mux). After a `start` pulse the
// accelerator runs the program from the start pc (control register 8, default 0) by itself
// until HALT or an error, then raises `done`.
//
// MATMUL schedule, k = execution cycle, F = FEED = 4 (fpga/cycle_model.py holds the same
// numbers):
//   k = 8p - 1      data-buffer banks read pixel p (through the channel shift; pixel 0 in
//                   DECODE), their output registers hold it at k = 8p
//   k = 8p + 1      serializers load pixel p; after the feeder's two registers bit b enters
//                   the array at k = 8p + F + b
//   k = 8p + F + r  row r's word of pixel p starts at column 0 (from zero)
//   k = 8p + 28 + F + COLS + r   partial-sum bank r read for pixel p (acc_in), registered at
//                                8p + 29 + F + COLS + r and with the bias select at 8p + 30
//   k = 8p + 31 + F + COLS + r   row r's word complete at relu_quant: initial value added
//   k = 8p + 32 + F + COLS + r   row r's result for pixel p written (pixel-sum: one cycle later)
module accelerator #(
    parameter ROWS = 8,          // array rows: filters computed at once (a tile's rows), 1..255
    parameter COLS = 8,          // array columns: combined-channel groups per tile, 1..255
    parameter CMAX = 64,         // data-buffer banks, one per channel: the most channels a
                                 // tensor may have, 1..4096
    parameter DDEPTH = 1024,     // data-buffer entries (pixels) per bank
    parameter PDEPTH = 1024,     // partial-sum buffer entries (int32) per row bank
    parameter WDEPTH = 512,      // weight-memory words, one array row of COLS bytes each
    parameter BDEPTH = 512,      // bias-memory words (int32)
    parameter SDEPTH = 64,       // shift-table words: COLS x 8 directions of 4 bits each
    parameter IMEM_DEPTH = 256   // instruction-memory words (128 bits each)
) (
    input  wire         clk,
    input  wire         rst,
    input  wire         start,
    output wire         busy,
    output wire         done,
    output wire         error,
    // host port
    input  wire         host_en,
    input  wire         host_we,
    input  wire [31:0]  host_addr,
    input  wire [31:0]  host_wdata,
    output reg  [31:0]  host_rdata
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(ROWS >= 1 && ROWS <= 255 && COLS >= 1 && COLS <= 255)) begin : check_rows_and_cols
            ROWS_and_COLS_must_be_1_to_255 parameter_check_failed();
        end
        if (!(CMAX >= 1 && CMAX <= 4096)) begin : check_cmax
            CMAX_must_be_1_to_4096 parameter_check_failed();
        end
        if (!(DDEPTH >= 2 && DDEPTH <= (1 << 20) && PDEPTH >= 2 && PDEPTH <= (1 << 20))) begin : check_ddepth_and_pdepth
            DDEPTH_and_PDEPTH_must_be_2_to_2_pow_20 parameter_check_failed();
        end
        if (!(WDEPTH >= 2 && BDEPTH >= 2 && SDEPTH >= 2 && IMEM_DEPTH >= 2)) begin : check_memory_depths
            memory_depths_must_be_at_least_2 parameter_check_failed();
        end
    endgenerate

    // SLOTS: bit slots of a cell's word window; TAPS: the power-of-two weights' codes 1..7
    // (2^0..2^6); LANES: words a cell accumulates at once; ACC: accumulator bits
    localparam SLOTS = 8, TAPS = 7, LANES = 4, ACC = 32;
    localparam IAW = $clog2(IMEM_DEPTH);         // instruction-memory address bits
    localparam DAW = $clog2(DDEPTH);             // data-buffer address bits (within a bank)
    localparam PAW = $clog2(PDEPTH);             // partial-sum buffer address bits
    localparam WAW = $clog2(WDEPTH);             // weight-memory address bits
    localparam BAW = $clog2(BDEPTH);             // bias-memory address bits
    localparam SAW = $clog2(SDEPTH);             // shift-table address bits
    localparam BKW = $clog2(CMAX);               // data-buffer bank-number bits
    localparam RW = (ROWS > 1) ? $clog2(ROWS) : 1;   // array-row number bits
    localparam WCH = (COLS * 8 + 31) / 32;       // 32-bit chunks of a weight word
    localparam SCH = COLS;                       // 32-bit chunks of a shift-table word
    localparam CNTW = 16;                        // bits of the array's per-cycle count of
                                                 // active (weight, datum) pairs
    localparam [3:0] R_CTRL = 4'd0, R_IMEM = 4'd1, R_WMEM = 4'd2, R_BMEM = 4'd3, R_SMEM = 4'd4,
                     R_DBUF = 4'd5, R_PBUF = 4'd6, R_TRACE = 4'd7;
    localparam [1:0] M_RELU = 2'd0, M_BIN = 2'd1, M_RAW = 2'd2, M_PIXSUM = 2'd3;

    // ---------------------------------------------------------------- decoder
    // Instruction fields are as wide as the ISA; the decoder has checked that every address
    // fits its memory, so only the low bits are used.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [IAW-1:0] imem_raddr;
    wire [127:0]   imem_q;
    wire [3:0]     error_code;
    wire [IAW:0]   pc;
    wire           exec_lw, exec_mm, retire;
    wire [23:0]    k;
    wire [7:0]     lw_rows, lw_cols, tile_rows, tile_cols;
    wire [23:0]    w_addr, b_addr, s_addr, pixels;
    wire [1:0]     mode;
    wire           acc_in, shift_en;
    wire [3:0]     group;
    wire [7:0]     fill;
    wire [11:0]    height, width, in_ch, out_ch;
    wire [19:0]    in_addr, out_addr, acc_addr;
    /* verilator lint_on UNUSEDSIGNAL */
    // `start` reaches the decoder four cycles later (start_t, start_q, start_qq, then
    // dec_start), so that the instruction memory reads run_pc in the three cycles after the
    // pulse: the decoder registers each word twice as it leaves the memory, the first register
    // folded into the block RAM, and needs the first word in its second register in the cycle
    // of its `start` (instruction_decoder.v). The pulse's own cycle reads nothing for the run
    // (timing closure: `take_start` as the read address's select had been the 8x8 top's longest
    // path, from the decoder's `busy` to the instruction memory's address), which also means
    // that a host write to the instruction memory landing in the pulse's cycle (presented in
    // the cycle before) is in the memory before the first read. The run's counters start with
    // the decoder, so every cycle count is the cycle model's; `busy` rises and `done` falls in
    // the cycle after `start`.
    reg            start_t, start_q, start_qq, dec_start;
    // `start` taken, the decoder not yet: the OR of the four as a register of its own (timing
    // closure: as a LUT of four inputs and `dec_busy` it made `busy` two LUT levels deep). Two
    // copies: `starting` for the logic inside, `starting_pin` (kept apart) for the status
    // outputs, whose LUTs the placer puts by their pins; inside, `run_busy` replaces `busy`
    // (timing closure: the route to the pin's LUT and back had been 16x16's longest path).
    // A third copy, `starting_go`, for the start chain's own decision (take_start), so that it
    // does not wait for `run_busy`'s LUT, which the placer puts among its many loads (timing
    // closure: starting -> run_busy -> take_start -> starting_pin had been the 8x8 top's longest
    // path, 7.2 ns of route).
    reg            starting, starting_pin, starting_go;
    reg  [IAW:0]   run_pc;                  // start_pc as it was in the cycle of `start`
    wire           dec_busy, dec_busy_next, dec_done, dec_error;
    assign busy = dec_busy | starting_pin;
    assign done = dec_done & ~starting_pin;
    assign error = dec_error & ~starting_pin;
    // `busy`, `done` and `error`, for the logic inside
    wire           run_busy = dec_busy | starting;
    wire           run_done = dec_done & ~starting;
    wire           run_error = dec_error & ~starting;

    wire           mm_pre, pre_shift_en;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [11:0]    pre_in_ch;                   // the steering uses its low log2(CMAX) bits
    wire [19:0]    pre_in_addr;                 // the channel shift uses its low DAW bits
    /* verilator lint_on UNUSEDSIGNAL */
    wire [11:0]    pre_height, pre_width;
    wire           lw_pre, lw_fetch;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [23:0]    pre_s_addr, fetch_w_addr, fetch_b_addr;  // their low address bits are used
    /* verilator lint_on UNUSEDSIGNAL */
    wire [127:0]   dec_word;
    instruction_decoder #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH),
        .PDEPTH(PDEPTH), .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH),
        .IMEM_DEPTH(IMEM_DEPTH), .IAW(IAW)) u_decoder (
        .clk(clk), .rst(rst), .start(dec_start), .start_pc(run_pc), .imem_addr(imem_raddr),
        .imem_data(imem_q),
        .busy(dec_busy), .busy_next(dec_busy_next), .done(dec_done), .error(dec_error),
        .error_code(error_code), .pc(pc),
        .exec_lw(exec_lw), .exec_mm(exec_mm), .k(k), .retire(retire),
        .rows(lw_rows), .cols(lw_cols), .w_addr(w_addr), .b_addr(b_addr), .s_addr(s_addr),
        .mode(mode), .acc_in(acc_in), .shift_en(shift_en), .group(group), .fill(fill),
        .height(height), .width(width), .in_addr(in_addr), .out_addr(out_addr),
        .in_ch(in_ch), .out_ch(out_ch), .acc_addr(acc_addr), .pixels(pixels),
        .tile_rows(tile_rows), .tile_cols(tile_cols),
        .mm_pre(mm_pre), .pre_in_ch(pre_in_ch), .pre_shift_en(pre_shift_en),
        .pre_in_addr(pre_in_addr), .pre_height(pre_height), .pre_width(pre_width),
        .lw_pre(lw_pre), .pre_s_addr(pre_s_addr),
        .lw_fetch(lw_fetch), .fetch_w_addr(fetch_w_addr), .fetch_b_addr(fetch_b_addr),
        .word(dec_word));

    // ---------------------------------------------------------------- host port decode
    reg  [31:0] host_addr_q, host_wdata_q;
    always @(posedge clk) begin
        host_addr_q <= host_addr;
        host_wdata_q <= host_wdata;
    end
    wire [3:0]  h_region = host_addr_q[31:28];
    wire [27:0] h_off = host_addr_q[27:0];
    // The host's write decision is made as the port presents a write and registered beside
    // each memory it enables, one host_write_enable each (the request from the port's enables
    // and address, and a copy of `host_write_ok` of the memory's own). A write is served when
    // it is presented while `busy` is low and no `start` is taken in that cycle, as a read is.
    wire host_write_req = host_en & host_we;
    wire host_write_ok = ~run_busy & ~start;
    wire [3:0] p_region = host_addr[31:28];
    // control register written by the host: where `start` begins (one program image can hold
    // several segments, each ending in HALT, run one after another with host work between)
    reg  [IAW:0] start_pc;
    wire         start_pc_we;
    host_write_enable u_start_pc_we (.clk(clk), .ok(host_write_ok), .we(start_pc_we),
        .req(host_write_req && p_region == R_CTRL && host_addr[3:0] == 4'd8));
    always @(posedge clk) begin
        if (rst) start_pc <= {(IAW+1){1'b0}};
        else if (start_pc_we) start_pc <= host_wdata_q[IAW:0];
    end
    wire take_start = start && !dec_busy && !starting_go;   // a start pulse that is not ignored
    always @(posedge clk) begin
        start_t <= !rst && take_start;
        start_q <= !rst && start_t;
        start_qq <= !rst && start_q;
        dec_start <= !rst && start_qq;
        if (rst) run_pc <= {(IAW+1){1'b0}};
        else if (take_start) run_pc <= start_pc;
    end
    // all three kept: yosys merges a plain register into a kept one with the same input, and
    // then `run_busy` into the pins' `busy`
    wire starting_n = !rst && (take_start || start_t || start_q || start_qq);
    (* keep *) always @(posedge clk) starting <= starting_n;
    (* keep *) always @(posedge clk) starting_pin <= starting_n;
    (* keep *) always @(posedge clk) starting_go <= starting_n;
    // The channel shift's host select, ~run_busy as a register of its own: the next values of
    // the decoder's busy and of `starting`, registered, so it equals ~run_busy in every cycle,
    // the first idle one included (timing closure: busy -> run_busy's LUT -> the nine
    // candidates' host selects -> a bank's select had been the 8x8 top's longest path)
    reg shift_host;
    (* keep *) always @(posedge clk) shift_host <= !(dec_busy_next || starting_n);
    reg  [3:0]  h_region_q;
    /* verilator lint_off UNUSEDSIGNAL */
    reg  [27:0] h_off_q;
    /* verilator lint_on UNUSEDSIGNAL */
    always @(posedge clk) begin
        h_region_q <= h_region;
        h_off_q <= h_off;
    end

    // ---------------------------------------------------------------- instruction memory
    // The word leaves each block RAM into the decoder's first word register and nothing else,
    // which the ECP5 flow folds into the block RAM's output register (timing closure: the
    // 5.83 ns clock-to-out and the route to the decoder had been the top's longest path). A read of
    // the entry being written returns x (READ_OLD_ON_COLLISION 0, no collision logic): only
    // the idle port's own read of the entry it writes does that: a run reads the memory from
    // the cycle after `start` on, after any write the port took before the pulse.
    // The read address is the decoder's while `busy` or `start` was high in the cycle before,
    // else the host's: a register of its own (kept) instead of `busy` (timing closure: `busy`'s
    // LUT, by its output pin, then the select had been 16x16's longest path). The decoder's
    // address matters from the cycle after `start` on (start_pc, its idle address, which is
    // run_pc), and the host's only for a read presented while idle, the only reads the port
    // serves (one presented in the cycle before `start` is read in the pulse's cycle), so
    // this equals `busy` as the select.
    reg imem_run_q;
    (* keep *) always @(posedge clk) imem_run_q <= run_busy | start;
    wire [31:0] imem_chunk [0:3];
    wire [3:0]  imem_chunk_we;
    genvar gi;
    generate
        for (gi = 0; gi < 4; gi = gi + 1) begin : imem
            host_write_enable u_we (.clk(clk), .ok(host_write_ok), .we(imem_chunk_we[gi]),
                .req(host_write_req && p_region == R_IMEM && host_addr[1:0] == gi));
            sdp_ram #(.WIDTH(32), .DEPTH(IMEM_DEPTH), .AW(IAW), .READ_OLD_ON_COLLISION(0)) u_ram (
                .clk(clk), .we(imem_chunk_we[gi]),
                .waddr(h_off[IAW+1:2]), .wdata(host_wdata_q),
                .raddr(imem_run_q ? imem_raddr : h_off[IAW+1:2]),
                .rdata(imem_chunk[gi]));
        end
    endgenerate
    assign imem_q = {imem_chunk[3], imem_chunk[2], imem_chunk[1], imem_chunk[0]};

    // ---------------------------------------------------------------- weight, bias, shift memories
    // LOAD_WEIGHTS, j = k: row j's weights and bias reach the array at k = j + 1 and the rows'
    // bias registers at k = j + 2. Every read's data wait a cycle in a plain register after the
    // block RAM (wmem_r, smem_r, bias_word_q), which the ECP5 flow folds into the block RAM's
    // output register (timing closure: the block RAMs' 5.83 ns clock-to-out no longer starts
    // a path through logic). The host port reads these registers too. The weight and shift
    // reads therefore start early: their addresses are counters loaded in the LOAD_WEIGHTS'
    // FETCH (the decoder's fetch_*_addr) or, for the shift memory, in the cycle before
    // (pre_s_addr), so the weight memory reads row 0 in DECODE and row j + 1 at k = j, the
    // shift memory its word from FETCH on, and the bias memory row j at k = j (its register
    // then stands where the bias word's had been).
    // A read of these memories never uses the word of an entry written in the same cycle
    // (READ_OLD_ON_COLLISION 0, so that no collision logic sits between a block RAM and its
    // register): only the host writes them, while idle, one access per cycle, and the run
    // reads them only while busy.
    // These memories and the partial-sum banks choose their read address (the run's or the
    // host's) by busy a cycle late, each from a register of its own beside it (`run_q`, kept
    // apart by `keep`; timing closure: busy's route to every memory, not logic, had set the
    // clock). A host read reaches the memory a cycle after the port presents it, so run_q is
    // busy in the cycle the read was presented: a read presented while idle is served, one
    // presented while busy is not. The run reads none of these memories in its first cycle.
    reg  [WAW-1:0] w_rd;                                // the weight row being read
    reg  [SAW-1:0] s_rd;                                // the shift word
    reg  [BAW-1:0] b_rd;                                // the bias row being read
    always @(posedge clk) begin
        w_rd <= lw_fetch ? fetch_w_addr[WAW-1:0] : w_rd + 1'b1;
        if (lw_pre) s_rd <= pre_s_addr[SAW-1:0];
        if (lw_fetch) b_rd <= fetch_b_addr[BAW-1:0];
        else if (exec_lw) b_rd <= b_rd + 1'b1;
    end
    wire [WCH*32-1:0] wmem_q;
    wire [SCH*32-1:0] smem_q;
    wire [31:0] bmem_q;
    reg  [WCH*32-1:0] wmem_r;
    reg  [SCH*32-1:0] smem_r;
    always @(posedge clk) begin
        wmem_r <= wmem_q;
        smem_r <= smem_q;
    end
    generate
        for (gi = 0; gi < WCH; gi = gi + 1) begin : wmem
            reg run_q;                                  // busy a cycle late, this memory's own
            (* keep *) always @(posedge clk) run_q <= run_busy;
            wire we;                                    // the host writes this memory
            host_write_enable u_we (.clk(clk), .ok(host_write_ok), .we(we),
                .req(host_write_req && p_region == R_WMEM && host_addr[7:0] == gi));
            sdp_ram #(.WIDTH(32), .DEPTH(WDEPTH), .AW(WAW), .READ_OLD_ON_COLLISION(0)) u_ram (
                .clk(clk), .we(we),
                .waddr(h_off[WAW+7:8]), .wdata(host_wdata_q),
                .raddr(run_q ? w_rd : h_off[WAW+7:8]), .rdata(wmem_q[gi*32 +: 32]));
        end
        for (gi = 0; gi < SCH; gi = gi + 1) begin : smem
            reg run_q;                                  // busy a cycle late, this memory's own
            (* keep *) always @(posedge clk) run_q <= run_busy;
            wire we;                                    // the host writes this memory
            host_write_enable u_we (.clk(clk), .ok(host_write_ok), .we(we),
                .req(host_write_req && p_region == R_SMEM && host_addr[7:0] == gi));
            sdp_ram #(.WIDTH(32), .DEPTH(SDEPTH), .AW(SAW), .READ_OLD_ON_COLLISION(0)) u_ram (
                .clk(clk), .we(we),
                .waddr(h_off[SAW+7:8]), .wdata(host_wdata_q),
                .raddr(run_q ? s_rd : h_off[SAW+7:8]), .rdata(smem_q[gi*32 +: 32]));
        end
    endgenerate
    reg bmem_run_q;                                     // busy a cycle late, this memory's own
    (* keep *) always @(posedge clk) bmem_run_q <= run_busy;
    wire bmem_we;                                       // the host writes the bias memory
    host_write_enable u_bmem_we (.clk(clk), .ok(host_write_ok), .we(bmem_we),
        .req(host_write_req && p_region == R_BMEM));
    sdp_ram #(.WIDTH(32), .DEPTH(BDEPTH), .AW(BAW), .READ_OLD_ON_COLLISION(0)) u_bmem (
        .clk(clk), .we(bmem_we), .waddr(h_off[BAW-1:0]),
        .wdata(host_wdata_q), .raddr(bmem_run_q ? b_rd : h_off[BAW-1:0]),
        .rdata(bmem_q));

    wire lw_first = exec_lw && k == 24'd0;
    wire lw_write = exec_lw && k != 24'd0;          // row k-1 arrives from the memories
    wire [7:0] lw_row = k[7:0] - 8'd1;
    // The bias word waits a cycle in a register beside its block RAM, and its row's write waits
    // with it (timing closure: the block RAM's clock-to-out and the route to every row's bias
    // register were one path). The last row's bias lands in the next instruction's FETCH; a
    // MATMUL reads the biases from k = INIT_START on, and the next LOAD_WEIGHTS clears them
    // at its k = 0, after its FETCH and DECODE.
    reg  [31:0]    bias_word_q;             // ACC = 32 bits, as the bias memory's word
    reg            bias_we_q;
    reg  [7:0]     bias_row_q;
    always @(posedge clk) begin
        bias_word_q <= bmem_q;
        bias_we_q <= lw_write;
        bias_row_q <= lw_row;
    end
    reg  [ACC-1:0] bias [0:ROWS-1];
    integer ri;
    always @(posedge clk) begin
        for (ri = 0; ri < ROWS; ri = ri + 1) begin
            if (lw_first) bias[ri] <= {ACC{1'b0}};
            else if (bias_we_q && bias_row_q == ri[7:0]) bias[ri] <= bias_word_q;
        end
    end
    // The shift word (a 4-bit direction per window position) loads at k = 0 of a
    // LOAD_WEIGHTS, on lw_fetch registered twice, one copy per 32-bit chunk (timing closure: a
    // compare of the 24-bit k had driven every flip-flop of the word). It is steered in the
    // next MATMUL's mm_pre, the LOAD_WEIGHTS' last cycle at the earliest, k = 1. (A LOAD_WEIGHTS
    // that fails in DECODE loads a stale word: the run stops there, and the next one's first
    // MATMUL fails NOWEIGHTS unless a LOAD_WEIGHTS comes first.)
    wire [COLS*32-1:0] shift_word;
    reg lw_decode;                                      // a LOAD_WEIGHTS' DECODE
    always @(posedge clk) lw_decode <= lw_fetch;
    generate
        for (gi = 0; gi < COLS; gi = gi + 1) begin : sw_chunk
            reg        load_q;
            reg [31:0] chunk;
            (* keep *) always @(posedge clk) load_q <= lw_decode;
            always @(posedge clk) if (load_q) chunk <= smem_r[gi*32 +: 32];
            assign shift_word[gi*32 +: 32] = chunk;
        end
    endgenerate
    // a weight word holds COLS bytes; columns past the tile's `cols` load as zero (gated)
    wire [COLS*8-1:0] row_bytes;
    generate
        for (gi = 0; gi < COLS; gi = gi + 1) begin : wcol
            assign row_bytes[gi*8 +: 8] = (gi < lw_cols) ? wmem_r[gi*8 +: 8] : 8'd0;
        end
    endgenerate

    // ---------------------------------------------------------------- MATMUL pixel counter
    // The pixel whose addresses are being computed: pixel p during k = 8p - 2 .. 8p + 5 (pixel
    // 0 from FETCH; the channel shift loads its candidates in the cycle before, mm_pre), so
    // that the addresses are registered before the banks read pixel p at k = 8p - 1.
    reg [23:0] rd_p;
    // rd_step (exec_mm && k[2:0] == 5) as registers, set in the cycle before (k[2:0] == 4 of a
    // MATMUL that goes on): k counts by one through a MATMUL's EXEC and k[2:0] == 5 is never
    // its first cycle, so both are rd_step cycle for cycle. The channel shift has a copy of its
    // own (timing closure: a compare of k had driven the enables of its nine counters).
    // rd_p is p at the serializers' load of pixel p (k = 8p + 1).
    wire rd_step_n = !rst && exec_mm && !retire && k[2:0] == 3'd4;
    reg rd_step, shift_step;
    always @(posedge clk) rd_step <= rd_step_n;
    (* keep *) always @(posedge clk) shift_step <= rd_step_n;
    always @(posedge clk) begin
        if (!exec_mm)
            rd_p <= 24'd0;
        else if (rd_step)
            rd_p <= rd_p + 24'd1;
    end
    // cycles from a MATMUL's first cycle to its first bit in the array: the bank's output
    // register, the serializers' load and the feeder's two registers (data_feeder.v;
    // fpga/cycle_model.py FEED_LATENCY, and the decoder's MM_FIXED counts them too; the bank
    // read itself is in DECODE)
    localparam [31:0] FEED = 4;
    wire [4:0] phase0 = k[4:0] - FEED[4:0];          // lane-0 bit index entering the array

    // ---------------------------------------------------------------- data buffer
    wire [CMAX*4-1:0]   bank_dir;
    wire [CMAX*DAW-1:0] bank_addr;
    wire [CMAX-1:0]     bank_fill;
    wire [CMAX*8-1:0]   bank_q;                     // each bank's byte from its output register
    reg  [CMAX-1:0]     bank_fill_q;
    channel_shift #(.BANKS(CMAX), .AW(DAW), .DW(12)) u_shift (
        .clk(clk), .start(mm_pre), .base(pre_in_addr[DAW-1:0]),
        .height(pre_height), .width(pre_width), .step(shift_step),
        .dir(bank_dir), .host(shift_host), .host_addr(host_addr[DAW-1:0]),
        .addr(bank_addr), .fill(bank_fill));
    // The addresses and fill flags are registered on their way to the banks (timing closure:
    // the counters' adders, the candidate addresses and each bank's select in one cycle, the
    // block RAM's address setup in the next); the flags wait, sampled at k = 8p - 1 (still
    // pixel p's), until the load.
    // The host's read address takes the same register (from the port, a cycle before h_off
    // holds it) through the channel shift, which gives every bank the host's address while
    // idle (no host-or-run multiplexer per bank: 5,120 2:1 multiplexers at CMAX 512, about
    // 4,600 LUTs measured), so no multiplexer sits between the register and the block RAM
    // either: with shift_host equal to ~run_busy in every cycle, the register holds what such
    // a multiplexer would have given, cycle for cycle.
    reg  [CMAX*DAW-1:0] bank_addr_q;
    reg  [CMAX-1:0]     bank_fill_r;
    always @(posedge clk) begin
        bank_addr_q <= bank_addr;
        bank_fill_r <= bank_fill;
        bank_fill_q <= bank_fill_r;
    end

    // Bank b is steered by entry b - in_ch of the shift word: a logarithmic shifter moves entry
    // i to bank in_ch + i (log2(CMAX) stages of 2:1 multiplexers instead of a COLS*8:1
    // multiplexer per bank). The directions hold for a whole MATMUL, so the shifter works in
    // the cycle before the MATMUL's FETCH, on the word's fields (the decoder's mm_pre, pre_*;
    // the shift word is loaded by the LOAD_WEIGHTS before), and each bank registers its
    // direction by FETCH, where pixel 0's addresses are computed (timing closure: the shifter
    // and the candidate select were one path to the address registers). Banks outside the tile's window get whatever lands there (the
    // identity below in_ch and past the word, padding entries past the window): the feeder
    // takes no slot from them, so their read addresses do not matter and no in-window flag
    // travels with the entries.
    localparam NSE = COLS * 8;                       // entries of a shift word
    localparam [3:0] IDENTITY = 4'd4;
    wire [3:0] steer [0:(BKW+1)*CMAX-1];            // one net per stage and bank
    genvar gt;
    generate
        for (gi = 0; gi < CMAX; gi = gi + 1) begin : steer_entry
            if (gi < NSE) begin : entry
                assign steer[gi] = pre_shift_en ? shift_word[gi*4 +: 4] : IDENTITY;
            end else begin : none
                assign steer[gi] = IDENTITY;
            end
        end
        for (gt = 0; gt < BKW; gt = gt + 1) begin : steer_stage
            for (gi = 0; gi < CMAX; gi = gi + 1) begin : pos
                if (gi >= (1 << gt)) begin : from
                    assign steer[(gt+1)*CMAX + gi] =
                        pre_in_ch[gt] ? steer[gt*CMAX + gi - (1 << gt)] : steer[gt*CMAX + gi];
                end else begin : below
                    assign steer[(gt+1)*CMAX + gi] = pre_in_ch[gt] ? IDENTITY : steer[gt*CMAX + gi];
                end
            end
        end
    endgenerate

    // write side: bank b receives tile row b - out_ch (modes 0 and 1). While idle, the host's
    // data-buffer writes take the same path (its byte in row 0's place, its bank as the shift),
    // so each bank's write port has one source (no host/array multiplexers per bank).
    localparam [12:0] NBANKS = CMAX[12:0];
    wire h_dbuf_we;                                     // the host writes the data buffer
    host_write_enable u_dbuf_we (.clk(clk), .ok(host_write_ok), .we(h_dbuf_we),
        .req(host_write_req && p_region == R_DBUF && {1'b0, host_addr[27:16]} < NBANKS));
    // The host's data-buffer writes wait a cycle in registers, and so does `busy` for the write
    // side (wb_busy): everything the write-back shifter and the entry chain select from is then
    // a register (timing closure: no path from the decoder's `busy` through the shifter). Array
    // writes come from row_wb_q (below), a cycle after a cycle in which busy was high.
    reg         hd_we_q, wb_busy;
    reg  [11:0] hd_bank_q;
    reg  [DAW-1:0] hd_entry_q;
    reg  [7:0]  hd_byte_q;
    always @(posedge clk) begin
        hd_we_q <= h_dbuf_we;
        hd_bank_q <= h_off[27:16];
        hd_entry_q <= h_off[DAW-1:0];
        hd_byte_q <= host_wdata_q[7:0];
        wb_busy <= run_busy;
    end
    // the write-back shifter's amount: the bank of row 0's write (< CMAX: the decoder checks
    // out_ch, the host's write enable the bank)
    wire [BKW-1:0] wb_shift = wb_busy ? out_ch[BKW-1:0] : hd_bank_q[BKW-1:0];
    // A host write reaches its bank 3 cycles after h_dbuf_we (hd_*_q, the bank's register wb,
    // the write), one or two cycles after a read issued right behind it reads the bank: the
    // two writes before a read's data are formed keep a copy here, and a read of their bank
    // and entry takes the byte from it (host_rdata below), so the port reads its own writes
    // at once, one access per cycle, as it did before the write-back was registered.
    reg  [1:0]     hw_v;
    reg  [11:0]    hw_bank [0:1];
    reg  [DAW-1:0] hw_entry [0:1];
    reg  [7:0]     hw_byte [0:1];
    always @(posedge clk) begin
        hw_v <= {hw_v[0], hd_we_q};
        hw_bank[0] <= hd_bank_q;
        hw_bank[1] <= hw_bank[0];
        hw_entry[0] <= hd_entry_q;
        hw_entry[1] <= hw_entry[0];
        hw_byte[0] <= hd_byte_q;
        hw_byte[1] <= hw_byte[0];
    end
    localparam [31:0] WR_START = 32 + FEED + COLS;   // k of row 0's first result
    // Row 0's write token, its pixel's entry and flags and the partial-sum entry it reads are
    // functions of k, computed for the next cycle (k + 1) and registered (timing closure: k's
    // 24-bit arithmetic in one cycle, the fan-out to the rows and the banks in the next). In a
    // MATMUL's first cycle they hold what DECODE computed: no token (exec_mm was low) and
    // entries nobody uses before k = INIT_START.
    wire [23:0] wr_rel_n = k - (WR_START[23:0] - 24'd1);   // (k + 1) - WR_START
    wire [23:0] wr_pix_n = {3'd0, wr_rel_n[23:3]};       // the pixel row 0 writes at k + 1
    // ... and its entry: one adder for both the data buffer (DAW bits, the write-back below)
    // and the partial-sum buffer (PAW bits, the raw outputs' row pipeline)
    /* verilator lint_off UNUSEDSIGNAL */
    reg  [19:0] wr_entry_sum0;
    /* verilator lint_on UNUSEDSIGNAL */
    always @(posedge clk) wr_entry_sum0 <= out_addr + wr_pix_n[19:0];
    wire [ROWS-1:0]      wr_v;              // writer token per row: its pixel's result is done
    wire [7:0]           row_result [0:ROWS-1];
    wire byte_mode = (mode == M_RELU) || (mode == M_BIN);
    // Row r's {write, byte} goes to bank out_ch + r through a logarithmic shifter, like the
    // steering above (instead of a ROWS:1 multiplexer per bank). The entry address does not
    // ride along: rows finish pixels in a diagonal wave (row r one cycle after row r - 1, see
    // rowpipe), so bank out_ch + r writes the entry row 0 wrote r cycles earlier. A register
    // chain along the banks carries it (DAW flip-flops and one 2:1 multiplexer per bank instead
    // of DAW bits through log2(CMAX) multiplexer stages per bank).
    localparam WB = 1 + 8;
    wire [WB-1:0] wback [0:(BKW+1)*CMAX-1];
    // Posted writes (timing closure): a row's {write, byte} is registered before the shifter
    // and each bank's {write, entry, byte} after it, so the path from the row's accumulator
    // through the quantization, the shifter and the route to the block RAMs is cut in three.
    // A write lands 2 cycles after the row produced it; the instruction retires without
    // waiting: the next instruction's FETCH and DECODE come first (fpga/cycle_model.py FETCH)
    // and a MATMUL's first bank read follows them, so every write lands before the banks are
    // read again (and before `done`, which HALT's FETCH and DECODE precede as well).
    reg  [WB-1:0]  row_wb_q [0:ROWS-1];                    // row r's {write, byte}, a cycle late
    reg  [DAW-1:0] wr_entry_sum0_q;                        // ... and row 0's entry with it
    always @(posedge clk) wr_entry_sum0_q <= wr_entry_sum0[DAW-1:0];
    wire [DAW-1:0] wr_entry0 = wb_busy ? wr_entry_sum0_q : hd_entry_q;
    // Whether each array row is in the loaded tile (row < tile_rows), a register per row
    // (timing closure: the decoder's tile_rows through that compare had been in front of the
    // partial-sum banks' write ports). tile_rows changes only at a start and in a
    // LOAD_WEIGHTS' DECODE, and no row writes before k = 32 + FEED + COLS of a MATMUL, so the
    // flag a cycle late is the compare's value at every write.
    reg  [ROWS-1:0] row_in_tile_q;
    generate
        for (gi = 0; gi < ROWS; gi = gi + 1) begin : row_in_tile
            localparam [7:0] R8 = gi;
            always @(posedge clk) row_in_tile_q[gi] <= R8 < tile_rows;
        end
    endgenerate
    wire [DAW-1:0] wb_entry [0:CMAX-1];                    // bank b's write entry this cycle
    reg  [DAW-1:0] wb_entry_q [0:CMAX-1];                  // ... and in the cycle before
    generate
        for (gi = 0; gi < CMAX; gi = gi + 1) begin : wback_row
            localparam [11:0] B = gi;
            if (gi == 0) begin : first
                assign wb_entry[gi] = wr_entry0;
            end else begin : next
                // whether row 0's entry enters the chain here (wb_shift == b), from flags
                // registered a cycle ahead (timing closure: the 12-bit compare had been in
                // front of every bank's entry multiplexer, on a path from out_ch and the
                // host's bank to the banks' write registers). The host's flag is current;
                // the run's lags out_ch by a cycle, which differs only in a MATMUL's DECODE,
                // where no entry enters the chain (the last write of the MATMUL before was
                // steered in FETCH, its own come from k = 32 + FEED + COLS on).
                reg at_out_ch_q, at_host_q;
                always @(posedge clk) begin
                    at_out_ch_q <= (out_ch == B);
                    at_host_q <= (h_off[27:16] == B);
                end
                wire enter = wb_busy ? at_out_ch_q : at_host_q;
                assign wb_entry[gi] = enter ? wr_entry0 : wb_entry_q[gi-1];
            end
            always @(posedge clk) wb_entry_q[gi] <= wb_entry[gi];
            if (gi == 0) begin : row0_or_host
                wire write = exec_mm && byte_mode && wr_v[gi] && row_in_tile_q[gi];
                always @(posedge clk) row_wb_q[gi] <= {write, row_result[gi]};
                assign wback[gi] = wb_busy ? row_wb_q[gi] : {hd_we_q, hd_byte_q};
            end else if (gi < ROWS) begin : row
                wire write = exec_mm && byte_mode && wr_v[gi] && row_in_tile_q[gi];
                always @(posedge clk) row_wb_q[gi] <= {write, row_result[gi]};
                assign wback[gi] = row_wb_q[gi];
            end else begin : none
                assign wback[gi] = {WB{1'b0}};
            end
        end
        for (gt = 0; gt < BKW; gt = gt + 1) begin : wback_stage
            for (gi = 0; gi < CMAX; gi = gi + 1) begin : pos
                if (gi >= (1 << gt)) begin : from
                    assign wback[(gt+1)*CMAX + gi] =
                        wb_shift[gt] ? wback[gt*CMAX + gi - (1 << gt)] : wback[gt*CMAX + gi];
                end else begin : below
                    assign wback[(gt+1)*CMAX + gi] = wb_shift[gt] ? {WB{1'b0}} : wback[gt*CMAX + gi];
                end
            end
        end
        for (gi = 0; gi < CMAX; gi = gi + 1) begin : dbank
            // the bank's direction this MATMUL; the identity from a reset until the first
            // MATMUL, a defined select for the host's reads (every candidate is the host's
            // address then; the channel shift's case takes an x to its default in a 4-state
            // simulator, which an index into the candidates did not: defensive, for any form)
            reg [3:0] dir_q;
            always @(posedge clk) begin
                if (rst)
                    dir_q <= IDENTITY;
                else if (mm_pre)
                    dir_q <= steer[BKW*CMAX + gi];
            end
            assign bank_dir[gi*4 +: 4] = dir_q;
            reg  [WB-1:0]  wb;                              // {write, byte}: array or host
            reg  [DAW-1:0] wb_addr;                         // ... and its entry
            always @(posedge clk) begin
                wb <= wback[BKW*CMAX + gi];
                wb_addr <= wb_entry[gi];
            end
            // The byte waits a cycle in a plain register (`ram_r`), which the ECP5 flow folds
            // into the block RAM's output register (timing closure: the 5.83 ns clock-to-out
            // and the route to the serializers had been the top's longest path). The read
            // starts a cycle earlier instead: pixel p's at k = 8p - 1, pixel 0's in DECODE.
            // In that DECODE the MATMUL before may still write its last result (its writes
            // are posted, above): a read of the entry written in the same cycle takes the
            // written byte (`hit`, a registered compare; the block RAM returns x there,
            // READ_OLD_ON_COLLISION 0), so every read sees every earlier write. Within a
            // MATMUL no read it uses collides with its own writes (the decoder's OVERLAP
            // check), and the host's writes and reads are idle's.
            wire [7:0] ram_q;
            reg  [7:0] ram_r;
            sdp_ram #(.WIDTH(8), .DEPTH(DDEPTH), .AW(DAW), .READ_OLD_ON_COLLISION(0)) u_ram (
                .clk(clk), .we(wb[WB-1]), .waddr(wb_addr), .wdata(wb[7:0]),
                .raddr(bank_addr_q[gi*DAW +: DAW]), .rdata(ram_q));
            wire       hit = wb[WB-1] && wb_addr == bank_addr_q[gi*DAW +: DAW];
            reg        hit_q, hit_r;                    // the read of 1 and 2 cycles ago collided
            reg  [7:0] hit_byte;                        // ... and the byte written then
            always @(posedge clk) begin
                ram_r <= ram_q;
                hit_q <= hit;
                hit_r <= hit_q;
                if (hit) hit_byte <= wb[7:0];
            end
            assign bank_q[gi*8 +: 8] = hit_r ? hit_byte : ram_r;
        end
    endgenerate

    // ---------------------------------------------------------------- feeder and array
    wire [COLS*SLOTS-1:0] col_data_next;
    wire feed_load = exec_mm && k[2:0] == 3'd1;
    // The feeder's window (in_ch, group, tile_cols) is latched in a MATMUL's DECODE, on mm_pre
    // registered twice (timing closure: `exec_mm && k == 0`, a 24-bit compare, had driven the
    // enables of its window registers). The fields are the MATMUL's from DECODE on; the MATMUL
    // before has retired and the feeder is under `clear`; a MATMUL that fails in DECODE loads
    // the window and never executes.
    reg mm_fetch_q, feed_setup;
    always @(posedge clk) begin
        mm_fetch_q <= mm_pre;
        feed_setup <= mm_fetch_q;
    end
    data_feeder #(.COLS(COLS), .SLOTS(SLOTS), .BANKS(CMAX), .BKW(BKW)) u_feeder (
        .clk(clk), .clear(!exec_mm), .setup(feed_setup), .in_ch(in_ch), .group(group), .tile_cols(tile_cols),
        .bank_q(bank_q), .bank_fill(bank_fill_q), .fill_value(fill),
        .load(feed_load), .load_valid(rd_p < pixels),
        .col_data_next(col_data_next));

    // The activity count arrives COUNT_DELAY cycles after the cells switch on. The last cell
    // of a MATMUL switches on at k <= 8P + rows + COLS + 3 + FEED (the last pixel's bit 7
    // through tap 6 of cell (rows-1, COLS-1)) and the MATMUL retires at
    // k = 8P + 23 + FEED + COLS + rows, so a
    // delay of up to 20 cycles still counts every pulse in its own instruction.
    localparam COUNT_DELAY_MAX = 20;
    wire [ROWS*LANES-1:0] row_out;
    wire [CNTW-1:0]      active_count;
    systolic_array #(.ROWS(ROWS), .COLS(COLS), .SLOTS(SLOTS), .TAPS(TAPS), .LANES(LANES),
        .ACC_BITS(ACC), .ROW_BITS(8), .COUNT_BITS(CNTW), .COUNT_DELAY_MAX(COUNT_DELAY_MAX)) u_array (
        .clk(clk), .w_clear(lw_first), .w_load(lw_write), .w_row(lw_row), .w_row_data(row_bytes),
        .chain_clear(!exec_mm), .col_data_next(col_data_next), .phase0(phase0),
        .row_out(row_out), .active_count(active_count));

    // ---------------------------------------------------------------- per-row pipeline
    // Pixel indices and tokens enter row 0 and move down one row per cycle, following the
    // array's row skew. Row r's word of pixel p shows its bit 31 at relu_quant at
    // k = 8p + 31 + FEED + COLS + r, where the initial value (bias, or the partial sum read two
    // cycles earlier) is added; the result is written at k = 8p + 32 + FEED + COLS + r.
    // The partial sum waits two cycles between its block RAM and relu_quant's adder (timing
    // closure): in a plain register (`pbuf_r`, which the ECP5 flow folds into the block RAM's
    // output register), then in one with the bias select (`init_q`). Its entry is known long
    // before, so the read moves two cycles earlier and no cycle is added.
    localparam [31:0] INIT_START = 28 + FEED + COLS; // k of row 0's first partial-sum read
    /* verilator lint_off UNUSEDSIGNAL */
    wire [23:0] init_rel_n = k - (INIT_START[23:0] - 24'd1);   // (k + 1) - INIT_START
    /* verilator lint_on UNUSEDSIGNAL */
    // What the rows need of their pixel index is computed once, for row 0, and travels down
    // with it (the MATMUL's fields stay put while a pixel crosses the rows): the token, the
    // partial-sum entry to read, the entry to write, and whether the pixel is the first or the
    // last. All registered, computed for k + 1 (above); the token only while the MATMUL goes on.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [23:0] rd_pix_n = {3'd0, init_rel_n[23:3]};
    reg  [19:0] rd_entry0;
    /* verilator lint_on UNUSEDSIGNAL */
    reg wr_tok0, wr_first0, wr_last0;
    always @(posedge clk) begin
        wr_tok0 <= exec_mm && !retire && k >= WR_START[23:0] - 24'd1 && wr_rel_n[2:0] == 3'd0
                   && (wr_pix_n < pixels);
        rd_entry0 <= acc_addr + rd_pix_n[19:0];
        wr_first0 <= (wr_pix_n == 24'd0);
        wr_last0 <= (wr_pix_n == pixels - 24'd1);
    end
    reg  [ROWS-1:0] wr_vq, wr_firstq, wr_lastq;
    reg  [PAW-1:0]  rd_eq [0:ROWS-1];
    reg  [PAW-1:0]  wr_eq [0:ROWS-1];
    wire [ACC-1:0]  pbuf_q [0:ROWS-1];
    reg  [ACC-1:0]  pbuf_r [0:ROWS-1];                  // ... a cycle later (the host reads it too)
    generate
        for (gi = 0; gi < ROWS; gi = gi + 1) begin : rowpipe
            localparam [31:0] SKEW = gi + COLS;
            wire [PAW-1:0] rd_in_e = (gi == 0) ? rd_entry0[PAW-1:0] : rd_eq[gi-1];
            wire           wr_in_v = (gi == 0) ? wr_tok0 : wr_vq[gi-1];
            wire [PAW-1:0] wr_in_e = (gi == 0) ? wr_entry_sum0[PAW-1:0] : wr_eq[gi-1];
            wire           wr_in_first = (gi == 0) ? wr_first0 : wr_firstq[gi-1];
            wire           wr_in_last = (gi == 0) ? wr_last0 : wr_lastq[gi-1];
            always @(posedge clk) begin
                rd_eq[gi] <= rd_in_e;
                wr_vq[gi] <= wr_in_v;
                wr_eq[gi] <= wr_in_e;
                wr_firstq[gi] <= wr_in_first;
                wr_lastq[gi] <= wr_in_last;
            end
            // row gi reads pixel p's partial sum at k = 8p + 28 + FEED + COLS + gi (rd_in_e =
            // its entry), holds it in pbuf_r from 8p + 30 + FEED + COLS + gi and in init_q from
            // 8p + 31 + FEED + COLS + gi, sees its write token at 8p + 32 + FEED + COLS + gi
            assign wr_v[gi] = wr_in_v && q_valid;    // q_valid: the row's word is complete

            wire          q_valid;
            wire [ACC-1:0] raw;
            reg  [ACC-1:0] init_q;                   // the word's initial value
            always @(posedge clk) begin
                pbuf_r[gi] <= pbuf_q[gi];
                init_q <= acc_in ? pbuf_r[gi] : bias[gi];
            end
            // The row's phase (phase0 - SKEW) as a register of its own, computed for k + 1
            // (timing closure: phase0's subtraction had been in front of the adder's enable and
            // word select, across the die from k). It equals phase0 - SKEW whenever k counted
            // the cycle before: from k = 1 of a MATMUL to the next instruction's FETCH, and no
            // word of a MATMUL completes before k = 31 + FEED + COLS.
            reg  [4:0]     phase_q;
            always @(posedge clk) phase_q <= phase0 + 5'd1 - SKEW[4:0];
            relu_quant #(.LANES(LANES), .ACC_BITS(ACC), .SHIFT(6)) u_rq (
                .clk(clk), .serial_in(row_out[gi*LANES +: LANES]), .phase(phase_q),
                .mode(mode), .init(init_q),
                .valid(q_valid), .raw(raw), .result(row_result[gi]));

            wire          sum_valid;
            wire [ACC-1:0] sum;
            output_accumulator #(.ACC_BITS(ACC)) u_oacc (
                .clk(clk), .in_valid(wr_v[gi] && mode == M_PIXSUM), .first(wr_in_first),
                .last(wr_in_last), .value(raw),
                .sum_valid(sum_valid), .sum(sum));

            wire raw_we = wr_v[gi] && mode == M_RAW && row_in_tile_q[gi];
            wire sum_we = exec_mm && sum_valid && row_in_tile_q[gi];
            reg run_q;                                  // busy a cycle late, this bank's own
            (* keep *) always @(posedge clk) run_q <= run_busy;
            wire host_wr;                               // the host writes this bank
            host_write_enable u_we (.clk(clk), .ok(host_write_ok), .we(host_wr),
                .req(host_write_req && p_region == R_PBUF && host_addr[27:16] == gi));
            // No read uses the word of an entry written in the same cycle: a MATMUL reads
            // pixel p's entry at 8p + 28 + .. and writes pixel p's at 8p + 32 + .. (never the
            // same cycle, 4 apart modulo 8), a pixel sum writes once after its last read, and
            // the host writes while idle, one access per cycle.
            sdp_ram #(.WIDTH(ACC), .DEPTH(PDEPTH), .AW(PAW), .READ_OLD_ON_COLLISION(0)) u_pbuf (
                .clk(clk),
                .we(raw_we || sum_we || host_wr),
                .waddr(raw_we ? wr_in_e : sum_we ? out_addr[PAW-1:0] : h_off[PAW-1:0]),
                .wdata(raw_we ? raw : sum_we ? sum : host_wdata_q),
                .raddr(run_q ? rd_in_e : h_off[PAW-1:0]),
                .rdata(pbuf_q[gi]));

        end
    endgenerate

    // ---------------------------------------------------------------- counters and trace
    reg [31:0] cycles, activity, retired, act_instr;
    wire [31:0] act_now = act_instr + {{(32-CNTW){1'b0}}, active_count};
    always @(posedge clk) begin
        if (rst || dec_start) begin
            cycles <= 32'd0;
            activity <= 32'd0;
            retired <= 32'd0;
            act_instr <= 32'd0;
        end else if (dec_busy) begin
            cycles <= cycles + 32'd1;
            if (exec_mm) activity <= activity + {{(32-CNTW){1'b0}}, active_count};
            act_instr <= retire ? 32'd0 : (exec_mm ? act_now : act_instr);
            if (retire) retired <= retired + 32'd1;
        end
    end
    // written at each retire while busy, read by the host while idle (reads while busy are
    // undefined): a colliding read's word is never used
    wire [31:0] trace_cycle_q, trace_act_q;
    sdp_ram #(.WIDTH(32), .DEPTH(IMEM_DEPTH), .AW(IAW), .READ_OLD_ON_COLLISION(0)) u_trace_cycle (
        .clk(clk), .we(retire), .waddr(pc[IAW-1:0]), .wdata(cycles + 32'd1),
        .raddr(h_off[IAW:1]), .rdata(trace_cycle_q));
    sdp_ram #(.WIDTH(32), .DEPTH(IMEM_DEPTH), .AW(IAW), .READ_OLD_ON_COLLISION(0)) u_trace_act (
        .clk(clk), .we(retire), .waddr(pc[IAW-1:0]), .wdata(exec_mm ? act_now : 32'd0),
        .raddr(h_off[IAW:1]), .rdata(trace_act_q));

    // ---------------------------------------------------------------- host read mux
    // A read presented at t (host_addr) is decoded at t + 1 (h_region, h_off), where the
    // memories take its address; their data leave the block RAMs at t + 2 and wait a cycle in a
    // plain register (timing closure: the ECP5 flow folds each into its block RAM's output
    // register), so host_rdata carries them at t + 3. The instruction, weight, bias and shift
    // memories, the partial-sum banks and the trace are read from those registers (the
    // decoder's word, wmem_r, bias_word_q, smem_r, pbuf_r, trace_*_r); the control registers
    // and the data buffer's forwarded writes are selected at t + 2 and registered. A
    // data-buffer bank's byte comes from the bank's output register (bank_q) like the others.
    reg [31:0] ctrl_q, ctrl_r;
    always @(posedge clk) begin
        case (h_off[3:0])
            4'd0: ctrl_q <= {24'd0, starting ? 4'd0 : error_code, 1'b0, run_error, run_done, run_busy};
            4'd1: ctrl_q <= cycles;
            4'd2: ctrl_q <= {{(31-IAW){1'b0}}, pc};
            4'd3: ctrl_q <= activity;
            4'd4: ctrl_q <= retired;
            4'd5: ctrl_q <= {8'd0, CMAX[7:0], COLS[7:0], ROWS[7:0]};
            4'd8: ctrl_q <= {{(31-IAW){1'b0}}, start_pc};
            default: ctrl_q <= 32'd0;
        endcase
        ctrl_r <= ctrl_q;
    end
    /* verilator lint_off UNUSEDSIGNAL */
    wire [11:0] hb_q = h_off_q[27:16];
    /* verilator lint_on UNUSEDSIGNAL */
    wire fwd0 = hw_v[0] && hw_bank[0] == hb_q && hw_entry[0] == h_off_q[DAW-1:0];
    wire fwd1 = hw_v[1] && hw_bank[1] == hb_q && hw_entry[1] == h_off_q[DAW-1:0];
    // a forwarded write's byte is chosen at t + 2, the bank's byte at t + 3 (bank_q)
    wire       fwd = fwd0 || fwd1;
    wire [7:0] fwd_byte = fwd0 ? hw_byte[0] : hw_byte[1];
    reg  [3:0]  h_region_r;
    reg  [7:0]  h_sel_r;                    // the offset's low bits: chunk or trace entry
    reg         fwd_r;
    reg  [7:0]  fwd_byte_r;
    reg  [BKW-1:0] h_bank_r;
    reg  [RW-1:0] h_row_r;                  // a partial-sum bank
    reg  [31:0] trace_cycle_r, trace_act_r;
    always @(posedge clk) begin
        h_region_r <= h_region_q;
        h_sel_r <= h_off_q[7:0];
        fwd_r <= fwd;
        fwd_byte_r <= fwd_byte;
        h_bank_r <= hb_q[BKW-1:0];
        h_row_r <= hb_q[RW-1:0];
        trace_cycle_r <= trace_cycle_q;
        trace_act_r <= trace_act_q;
    end
    always @* begin
        case (h_region_r)
            R_CTRL:  host_rdata = ctrl_r;
            R_IMEM:  host_rdata = dec_word[h_sel_r[1:0]*32 +: 32];
            R_WMEM:  host_rdata = wmem_r[h_sel_r*32 +: 32];
            R_BMEM:  host_rdata = bias_word_q;
            R_SMEM:  host_rdata = smem_r[h_sel_r*32 +: 32];
            R_DBUF:  host_rdata = {24'd0, fwd_r ? fwd_byte_r : bank_q[h_bank_r*8 +: 8]};
            R_PBUF:  host_rdata = pbuf_r[h_row_r];
            R_TRACE: host_rdata = h_sel_r[0] ? trace_act_r : trace_cycle_r;
            default: host_rdata = 32'd0;
        endcase
    end
endmodule
`default_nettype wire
