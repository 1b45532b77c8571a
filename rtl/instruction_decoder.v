`default_nettype none
// Instruction decoder and sequencer of the SAC accelerator (docs/isa.md, docs/microarchitecture.md).
//
// Each instruction takes FETCH and DECODE, then LOAD_WEIGHTS or MATMUL execute for a number of
// cycles that depends only on the instruction and the loaded tile: exactly the cycle model of
// fpga/cycle_model.py. `k` counts the execution cycles; the datapath in accelerator.v is
// scheduled off it. A word that fails a check raises `error` with the code fpga/isa.py gives
// it, halts and executes nothing (so it writes nothing).
//
// Timing: the next word is read ahead (start_pc while idle, pc + 1 while executing) and
// registered as it leaves the memory (`w_q`), so the memory's clock-to-out is off FETCH's
// path; executions last at least two cycles, which gives the read-ahead its time, and the top
// registers `start` so that the word at start_pc is read in the cycle before. FETCH runs every
// check and the pixel product and registers the results, and a MATMUL's fields (the top computes
// pixel 0's bank addresses from them in DECODE); DECODE latches the rest and starts EXEC.
module instruction_decoder #(
    // the accelerator's sizes (accelerator.v says what each is): the checks of every word
    // against them are fpga/isa.py's
    parameter ROWS = 8,
    parameter COLS = 8,
    parameter CMAX = 64,
    parameter DDEPTH = 1024,
    parameter PDEPTH = 1024,
    parameter WDEPTH = 512,
    parameter BDEPTH = 512,
    parameter SDEPTH = 64,
    parameter IMEM_DEPTH = 256,
    parameter IAW = 8                       // instruction address width, >= clog2(IMEM_DEPTH)
) (
    input  wire             clk,
    input  wire             rst,
    input  wire             start,
    input  wire [IAW:0]     start_pc,       // first instruction to run (segments of a program)
    output wire [IAW-1:0]   imem_addr,
    input  wire [127:0]     imem_data,      // the word at the imem_addr of the cycle before
    // status
    output reg              busy,
    output reg              done,
    output reg              error,
    output reg  [3:0]       error_code,
    output reg  [IAW:0]     pc,
    // execution
    output reg              exec_lw,
    output reg              exec_mm,
    output reg  [23:0]      k,
    output wire             retire,         // last cycle of the current instruction
    // fields of the executing instruction
    output reg  [7:0]       rows,           // LOAD_WEIGHTS
    output reg  [7:0]       cols,
    output reg  [23:0]      w_addr,
    output reg  [23:0]      b_addr,
    output reg  [23:0]      s_addr,
    output reg  [1:0]       mode,           // MATMUL (from its DECODE cycle on)
    output reg              acc_in,
    output reg              shift_en,
    output reg  [3:0]       group,
    output reg  [7:0]       fill,
    output reg  [11:0]      height,
    output reg  [11:0]      width,
    output reg  [19:0]      in_addr,
    output reg  [19:0]      out_addr,
    output reg  [11:0]      in_ch,
    output reg  [11:0]      out_ch,
    output reg  [19:0]      acc_addr,
    output reg  [23:0]      pixels,
    output reg  [7:0]       tile_rows,      // shape of the loaded tile
    output reg  [7:0]       tile_cols,
    // In a MATMUL's FETCH (mm_fetch), its in_ch and shift_en fields as the word holds them, a
    // cycle before in_ch and shift_en: what the top computes once per MATMUL from them (the
    // banks' shift directions) is registered by DECODE.
    output wire             mm_fetch,
    output wire [11:0]      fetch_in_ch,
    output wire             fetch_shift_en
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
        if (!(DDEPTH >= 1 && DDEPTH <= (1 << 20) && PDEPTH >= 1 && PDEPTH <= (1 << 20))) begin : check_ddepth_and_pdepth
            DDEPTH_and_PDEPTH_must_be_1_to_2_pow_20 parameter_check_failed();
        end
        if (!(WDEPTH >= 1 && BDEPTH >= 1 && SDEPTH >= 1 && WDEPTH <= (1 << 24) && BDEPTH <= (1 << 24) && SDEPTH <= (1 << 24))) begin : check_wdepth_bdepth_sdepth
            WDEPTH_BDEPTH_SDEPTH_must_be_1_to_2_pow_24 parameter_check_failed();
        end
        if (!((1 << IAW) >= IMEM_DEPTH)) begin : check_iaw
            IAW_must_be_at_least_clog2_IMEM_DEPTH parameter_check_failed();
        end
    endgenerate

    localparam [3:0] OP_LW = 4'd1, OP_MM = 4'd2, OP_HALT = 4'd15;
    localparam [3:0] E_NONE = 4'd0, E_OPCODE = 4'd1, E_RESERVED = 4'd2, E_TILE = 4'd3,
                     E_WRANGE = 4'd4, E_NOWEIGHTS = 4'd5, E_SHAPE = 4'd6, E_DBUF = 4'd7,
                     E_PBUF = 4'd8, E_OVERLAP = 4'd9, E_PC = 4'd10;
    localparam [1:0] S_IDLE = 2'd0, S_FETCH = 2'd1, S_DECODE = 2'd2, S_EXEC = 2'd3;
    localparam [1:0] M_PIXSUM = 2'd3;
    // memory sizes as wide constants for the range checks
    localparam [31:0] L_ROWS = ROWS, L_COLS = COLS, L_CMAX = CMAX, L_DDEPTH = DDEPTH,
                      L_PDEPTH = PDEPTH, L_WDEPTH = WDEPTH, L_BDEPTH = BDEPTH,
                      L_SDEPTH = SDEPTH, L_IMEM = IMEM_DEPTH;
    // bits each opcode uses (everything else is reserved)
    localparam [127:0] USED_LW = {32'd0, {88{1'b1}}, 4'd0, 4'hF};
    localparam [127:0] USED_MM = {{116{1'b1}}, 1'b0, {11{1'b1}}};
    localparam [127:0] USED_HALT = {124'd0, 4'hF};

    reg [1:0] state;
    reg [23:0] exec_len;
    // read ahead: start_pc while idle (start moves to FETCH), pc + 1 while executing (the
    // retire cycle moves to FETCH with pc + 1), pc in FETCH and DECODE
    assign imem_addr = (state == S_IDLE) ? start_pc[IAW-1:0]
                     : (state == S_EXEC) ? pc[IAW-1:0] + 1'b1 : pc[IAW-1:0];
    // results of FETCH's checks, used in DECODE
    reg [3:0]  err_q;
    reg [23:0] pix_q;                        // height x width
    reg [23:0] mm_len_q;                     // a MATMUL's execution cycles
    reg        pc_over_q;
    assign retire = (state == S_EXEC && k == exec_len - 24'd1)
                  || (state == S_DECODE && !pc_over_q && op == OP_HALT && err_q == E_NONE);

    // ---- field extraction (combinational, from the fetched word) ----
    // the word registered as it leaves the memory: in FETCH and DECODE the word at pc (read
    // ahead, above); in other states whatever was read, unused
    reg [127:0] w_q;
    always @(posedge clk) w_q <= imem_data;
    wire [127:0] w = w_q;
    wire [3:0]  op = w[3:0];
    wire [7:0]  f_rows = w[15:8];
    wire [7:0]  f_cols = w[23:16];
    wire [23:0] f_waddr = w[47:24];
    wire [23:0] f_baddr = w[71:48];
    wire [23:0] f_saddr = w[95:72];
    wire [1:0]  f_mode = w[5:4];
    wire        f_accin = w[6];
    wire        f_shift = w[7];
    wire [3:0]  f_group = {1'b0, w[10:8]} + 4'd1;
    wire [7:0]  f_fill = w[19:12];
    wire [11:0] f_h = w[31:20];
    wire [11:0] f_w = w[43:32];
    wire [19:0] f_in = w[63:44];
    wire [19:0] f_out = w[83:64];
    wire [11:0] f_inch = w[95:84];
    wire [11:0] f_outch = w[107:96];
    wire [19:0] f_acc = w[127:108];
    wire [23:0] f_prod = f_h * f_w;
    assign mm_fetch = (state == S_FETCH) && (op == OP_MM);
    assign fetch_in_ch = f_inch;
    assign fetch_shift_en = f_shift;
    // Toggle coverage off for f_pix, f_nout and slots: 32-bit copies of f_prod and f_slots
    // (whose toggles are counted) for the range checks; their top bits are tied to 0.
    /* verilator coverage_off */
    wire [31:0] f_pix = {8'd0, f_prod};
    /* verilator coverage_on */
    wire byte_mode = (f_mode == 2'd0) || (f_mode == 2'd1);
    /* verilator coverage_off */
    wire [31:0] f_nout = (f_mode == M_PIXSUM) ? 32'd1 : f_pix;
    /* verilator coverage_on */
    // Channels a MATMUL's window spans, tile_cols x group, for each of the 8 group sizes:
    // registered, so FETCH only selects one by the word's group field. tile_cols changes in a
    // LOAD_WEIGHTS' DECODE and the next FETCH is at least three cycles later (LOAD_WEIGHTS
    // executes for at least two), so the table is current by then; after `start` the tile is
    // empty and a MATMUL fails the NOWEIGHTS check, which comes first.
    wire [95:0] slots_of;                    // group g + 1 at bits 12g..
    genvar gs;
    generate
        for (gs = 0; gs < 8; gs = gs + 1) begin : slots_table
            localparam [3:0] G = gs + 1;
            reg [11:0] slots;
            always @(posedge clk) slots <= {4'd0, tile_cols} * {8'd0, G};
            assign slots_of[gs * 12 +: 12] = slots;
        end
    endgenerate
    wire [11:0] f_slots = slots_of[{w[10:8], 2'd0} * 3 +: 12];
    /* verilator coverage_off */
    wire [31:0] slots = {20'd0, f_slots};
    /* verilator coverage_on */

    // The range checks are written so that the pixel product only feeds comparators (the
    // FETCH path: memory -> product -> checks -> error register): "a + n > limit" is
    // "a > limit or n > limit - a", and the subtraction does not wait for n.
    function over;                           // a + n > limit (all below 2^31)
        input [31:0] a, n, limit;
        over = (a > limit) || (n > limit - a);
    endfunction

    function clash;                          // [a0, a0+an) and [b0, b0+bn) intersect
        input [31:0] a0, an, b0, bn;
        clash = (a0 < b0 || a0 - b0 < bn) && (b0 < a0 || b0 - a0 < an);
    endfunction

    wire pc_over = ({{(31-IAW){1'b0}}, pc} >= L_IMEM);
    reg [3:0] err;
    always @* begin
        err = E_NONE;
        if (op != OP_LW && op != OP_MM && op != OP_HALT)
            err = E_OPCODE;
        else if ((op == OP_LW && (w & ~USED_LW) != 128'd0)
              || (op == OP_MM && (w & ~USED_MM) != 128'd0)
              || (op == OP_HALT && (w & ~USED_HALT) != 128'd0)
              || (op == OP_MM && ((!f_shift && f_fill != 8'd0) || (!f_accin && f_acc != 20'd0)
                                  || (!byte_mode && f_outch != 12'd0))))
            err = E_RESERVED;
        else if (op == OP_LW) begin
            if (f_rows == 8'd0 || {24'd0, f_rows} > L_ROWS || f_cols == 8'd0 || {24'd0, f_cols} > L_COLS)
                err = E_TILE;
            else if (over({8'd0, f_waddr}, {24'd0, f_rows}, L_WDEPTH)
                  || over({8'd0, f_baddr}, {24'd0, f_rows}, L_BDEPTH)
                  || {8'd0, f_saddr} >= L_SDEPTH)
                err = E_WRANGE;
        end else if (op == OP_MM) begin
            if (tile_rows == 8'd0)
                err = E_NOWEIGHTS;
            else if (f_h == 12'd0 || f_w == 12'd0 || f_pix > L_DDEPTH)
                err = E_SHAPE;
            else if (over({12'd0, f_in}, f_pix, L_DDEPTH) || over({20'd0, f_inch}, slots, L_CMAX))
                err = E_DBUF;
            else if (f_accin && over({12'd0, f_acc}, f_pix, L_PDEPTH))
                err = E_PBUF;
            else if (byte_mode) begin
                if (over({12'd0, f_out}, f_pix, L_DDEPTH) || over({20'd0, f_outch}, {24'd0, tile_rows}, L_CMAX))
                    err = E_DBUF;
                else if (clash({20'd0, f_inch}, slots, {20'd0, f_outch}, {24'd0, tile_rows})
                      && clash({12'd0, f_in}, f_pix, {12'd0, f_out}, f_pix))
                    err = E_OVERLAP;
            end else begin
                if (over({12'd0, f_out}, f_nout, L_PDEPTH))
                    err = E_PBUF;
                else if (f_accin && f_out != f_acc
                      && clash({12'd0, f_acc}, f_pix, {12'd0, f_out}, f_nout))
                    err = E_OVERLAP;
            end
        end
    end

    // ---- sequencing ----
    // 24 + FEED_LATENCY + COLS (FEED_LATENCY = 4: the bank read, the serializers' load and the
    // feeder's two registers); see fpga/cycle_model.py
    localparam [31:0] MM_FIXED = 28 + COLS;
    always @(posedge clk) begin
        if (rst) begin
            state <= S_IDLE;
            busy <= 1'b0;
            done <= 1'b0;
            error <= 1'b0;
            error_code <= E_NONE;
            pc <= {(IAW+1){1'b0}};
            exec_lw <= 1'b0;
            exec_mm <= 1'b0;
            tile_rows <= 8'd0;
            tile_cols <= 8'd0;
        end else begin
            case (state)
                S_IDLE: if (start) begin
                    state <= S_FETCH;
                    busy <= 1'b1;
                    done <= 1'b0;
                    error <= 1'b0;
                    error_code <= E_NONE;
                    pc <= start_pc;
                    tile_rows <= 8'd0;
                    tile_cols <= 8'd0;
                end
                S_FETCH: begin                      // the word is here: check it
                    state <= S_DECODE;
                    err_q <= err;
                    pc_over_q <= pc_over;
                    pix_q <= f_pix[23:0];
                    mm_len_q <= {f_pix[20:0], 3'd0} + MM_FIXED[23:0] + {16'd0, tile_rows}
                              + ((f_mode == M_PIXSUM) ? 24'd1 : 24'd0);
                    // A MATMUL's fields are out a cycle before it executes: the top computes
                    // pixel 0's bank addresses in DECODE (accelerator.v). Nothing reads them
                    // outside EXEC of a MATMUL, and the one before has retired.
                    if (op == OP_MM) begin
                        mode <= f_mode;
                        acc_in <= f_accin;
                        shift_en <= f_shift;
                        group <= f_group;
                        fill <= f_fill;
                        height <= f_h;
                        width <= f_w;
                        in_addr <= f_in;
                        out_addr <= f_out;
                        in_ch <= f_inch;
                        out_ch <= f_outch;
                        acc_addr <= f_acc;
                    end
                end
                S_DECODE: begin
                    k <= 24'd0;
                    if (pc_over_q || err_q != E_NONE) begin
                        state <= S_IDLE;
                        busy <= 1'b0;
                        done <= 1'b1;
                        error <= 1'b1;
                        error_code <= pc_over_q ? E_PC : err_q;
                    end else if (op == OP_HALT) begin
                        state <= S_IDLE;
                        busy <= 1'b0;
                        done <= 1'b1;
                    end else if (op == OP_LW) begin
                        state <= S_EXEC;
                        exec_lw <= 1'b1;
                        rows <= f_rows;
                        cols <= f_cols;
                        w_addr <= f_waddr;
                        b_addr <= f_baddr;
                        s_addr <= f_saddr;
                        tile_rows <= f_rows;
                        tile_cols <= f_cols;
                        exec_len <= {16'd0, f_rows} + 24'd1;
                    end else begin
                        state <= S_EXEC;
                        exec_mm <= 1'b1;
                        pixels <= pix_q;
                        exec_len <= mm_len_q;
                    end
                end
                default: begin                      // S_EXEC
                    k <= k + 24'd1;
                    if (retire) begin
                        state <= S_FETCH;
                        exec_lw <= 1'b0;
                        exec_mm <= 1'b0;
                        pc <= pc + 1'b1;
                    end
                end
            endcase
        end
    end
endmodule
`default_nettype wire
