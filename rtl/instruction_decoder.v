`default_nettype none
// Instruction decoder and sequencer of the SAC accelerator (docs/isa.md, docs/microarchitecture.md).
//
// Each instruction takes FETCH and DECODE, then LOAD_WEIGHTS or MATMUL execute for a number of
// cycles that depends only on the instruction and the loaded tile: exactly the cycle model of
// fpga/cycle_model.py. `k` counts the execution cycles; the datapath in accelerator.v is
// scheduled off it. A word that fails a check raises `error` with the code fpga/isa.py gives
// it, halts and executes nothing (so it writes nothing).
//
// Timing: the next word is read ahead (start_pc while idle, pc + 1 from FETCH on) and
// registered twice as it leaves the memory: `w_ram_q`, which the ECP5 flow folds into the
// block RAM's output register (the memory's 5.83 ns clock-to-out is off every path), then
// `w_q`, a fabric register the placer puts near the logic it feeds (the block RAM's output
// register sits where the block RAM is, about 3 ns of route from it). `w_q` holds the word at
// the address of three cycles before: executions last at least two cycles, which gives the
// read-ahead its time, and the top registers `start` four times, so that the memory's address
// is start_pc in the three cycles before the decoder's `start`. So `w_q` holds the next word
// already in the cycle before FETCH (the last cycle of an execution, or the cycle of `start`),
// and keeps it through FETCH and DECODE:
// - in that cycle the top takes a MATMUL's address fields from it (mm_pre, pre_*), so that
//   pixel 0's banks are read in DECODE, and the decoder multiplies the pixel count and
//   computes the bounds it is compared with (registered every cycle, used in FETCH);
// - FETCH compares the product with those bounds, makes every other check (but a
//   LOAD_WEIGHTS' rows against its memories' room: it registers those bounds), and registers
//   the results with a MATMUL's fields;
// - DECODE compares a LOAD_WEIGHTS' rows, ORs the registered flags, latches the rest and
//   starts EXEC.
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
                                            // (start_pc's in the cycle of `start` and the one before)
    // status
    output reg              busy,
    output wire             busy_next,      // busy after this cycle's clock edge (from rst too)
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
    // In the cycle before a MATMUL's FETCH (mm_pre: the last cycle of the instruction before,
    // or the cycle of `start`), some of its fields as the first word register (`w_ram_q`)
    // holds them, two cycles before the registered ones above: what the top computes once per
    // MATMUL from them (the banks' shift directions, pixel 0's candidate addresses) is
    // registered by FETCH, so pixel 0's banks are read in DECODE.
    output wire             mm_pre,
    output wire [11:0]      pre_in_ch,
    output wire             pre_shift_en,
    output wire [19:0]      pre_in_addr,
    output wire [11:0]      pre_height,
    output wire [11:0]      pre_width,
    // ... and in the cycle before a LOAD_WEIGHTS' FETCH (lw_pre), its shift-table address: the
    // top reads the shift word from FETCH on, so that it is loaded by the LOAD_WEIGHTS' second
    // cycle, before the next instruction's mm_pre.
    output wire             lw_pre,
    output wire [23:0]      pre_s_addr,
    // In a LOAD_WEIGHTS' FETCH (lw_fetch), its weight and bias addresses as the word holds
    // them: the top starts the weight memory's read in DECODE, a cycle before EXEC, so that
    // its data can wait in a register after each block RAM.
    output wire             lw_fetch,
    output wire [23:0]      fetch_w_addr,
    output wire [23:0]      fetch_b_addr,
    // the word as it left the memory (`w_ram_q`): the host port reads the instruction memory
    // through this register, so the memory's data drive nothing else
    output wire [127:0]     word
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
    // The execution's last cycle as a register (timing closure: `retire` enables the pc, the
    // trace and the write-back's token, and a compare of k with the length before them was the
    // top's longest path): `exec_last` is the length - 2, and `last_q` is set in the cycle
    // after k reaches it. Every execution lasts at least two cycles, so k = 0 is never last.
    reg [23:0] exec_last;
    reg        last_q;
    // read ahead: start_pc while idle (start moves to FETCH), pc + 1 from FETCH on (the retire
    // cycle moves to FETCH with pc + 1): the word is in `w_q` three cycles later, i.e. from the
    // second cycle of the execution on, which is at the latest the cycle before the next FETCH.
    // Until then `w_q` holds the word of this instruction (read from the FETCH before on).
    assign imem_addr = (state == S_IDLE) ? start_pc[IAW-1:0] : pc[IAW-1:0] + 1'b1;
    // results of FETCH's checks, used in DECODE
    reg [23:0] mm_rest_q;                    // a MATMUL's execution cycles - 2 - 8 x pixels
    reg        pc_over_q;
    assign retire = (state == S_EXEC && last_q)
                  || (state == S_DECODE && !pc_over_q && op == OP_HALT && err_pre_q == E_NONE);

    // ---- field extraction (combinational, from the fetched word) ----
    // the word registered twice as it leaves the memory (above): in FETCH and DECODE the word
    // at pc (read ahead); in other states whatever was read, unused
    reg [127:0] w_ram_q, w_q;
    always @(posedge clk) w_ram_q <= imem_data;
    (* keep *) always @(posedge clk) w_q <= w_ram_q;
    // w_q's in_ch field again, for the top's channel steering alone (pre_in_ch), kept apart from
    // w_q's (yosys merges equal registers unless both are kept) (timing closure: with the
    // steering's loads in the CMAX banks, the route from w_q's in_ch bits to FETCH's channel
    // bound had been the 16x16 top's longest path)
    reg [11:0] inch_steer_q;
    (* keep *) always @(posedge clk) inch_steer_q <= w_ram_q[95:84];
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
    // The cycle before FETCH: the next state is FETCH (an execution's last cycle, or `start`),
    // and w_q already holds the word FETCH will see (above).
    wire        pre = (state == S_EXEC && last_q) || (state == S_IDLE && start);
    assign mm_pre = pre && (op == OP_MM);
    assign pre_shift_en = f_shift;
    assign pre_height = f_h;
    assign pre_width = f_w;
    assign pre_in_addr = f_in;
    assign pre_in_ch = inch_steer_q;
    assign lw_pre = pre && (op == OP_LW);
    assign pre_s_addr = f_saddr;
    assign lw_fetch = (state == S_FETCH) && (op == OP_LW);
    assign fetch_w_addr = f_waddr;
    assign fetch_b_addr = f_baddr;
    assign word = w_ram_q;
    wire byte_mode = (f_mode == 2'd0) || (f_mode == 2'd1);
    // Channels a MATMUL's window spans, tile_cols x group, for each of the 8 group sizes:
    // registered, so FETCH only selects one by the word's group field. tile_cols changes in a
    // LOAD_WEIGHTS' DECODE and the next FETCH is at least three cycles later (LOAD_WEIGHTS
    // executes for at least two), so the table is current by then; after `start` the tile is
    // empty and a MATMUL fails the NOWEIGHTS check, which comes first.
    // tile_cols x G for a group size G (a constant, 1..8) as shifts and adds (timing closure: a
    // multiplication had been mapped to a DSP block, 3.9 ns, in front of the tables' registers)
    function [11:0] times_group;
        input [7:0] n;
        input [3:0] g;
        times_group = (g[0] ? {4'd0, n} : 12'd0)
                    + (g[1] ? {3'd0, n, 1'b0} : 12'd0)
                    + (g[2] ? {2'd0, n, 2'b0} : 12'd0)
                    + (g[3] ? {1'b0, n, 3'b0} : 12'd0);
    endfunction
    wire [95:0] slots_of;                    // group g + 1 at bits 12g..
    genvar gs;
    generate
        for (gs = 0; gs < 8; gs = gs + 1) begin : slots_table
            localparam [3:0] G = gs + 1;
            reg [11:0] slots;
            always @(posedge clk) slots <= times_group(tile_cols, G);
            assign slots_of[gs * 12 +: 12] = slots;
        end
    endgenerate
    wire [11:0] f_slots = slots_of[{w[10:8], 2'd0} * 3 +: 12];
    // The channel-range checks against the loaded tile, as bounds registered from the tile
    // (timing closure: "in_ch + slots > CMAX" and "out_ch + rows > CMAX" had been a subtraction
    // and a compare in FETCH or DECODE, in front of out_past_q or of the failure flag). Each is
    // "ch > CMAX - n", with CMAX - n computed once per tile on 14 bits (negative: every channel
    // fails); FETCH compares the word's channel with it. Current by the next FETCH, like the
    // slots table above.
    reg  [13:0] out_ch_room;                 // CMAX - tile_rows
    always @(posedge clk) out_ch_room <= {1'b0, L_CMAX[12:0]} - {6'd0, tile_rows};
    wire        out_ch_over = out_ch_room[13] || ({1'b0, f_outch} > out_ch_room[12:0]);
    wire [7:0]  in_ch_over_of;               // in_ch + tile_cols x (g + 1) > CMAX, at bit g
    generate
        for (gs = 0; gs < 8; gs = gs + 1) begin : in_ch_room_table
            localparam [3:0] GROUP = gs + 1;
            reg [13:0] room;                 // CMAX - tile_cols x GROUP
            always @(posedge clk) room <= {1'b0, L_CMAX[12:0]} - {2'd0, times_group(tile_cols, GROUP)};
            assign in_ch_over_of[gs] = room[13] || ({1'b0, f_inch} > room[12:0]);
        end
    endgenerate
    wire        in_ch_over = in_ch_over_of[w[10:8]];

    wire pc_over = ({{(31-IAW){1'b0}}, pc} >= L_IMEM);

    // The checks in two halves, so that the pixel product and the bounds it is compared with
    // never meet a comparator in the cycle they are computed (the FETCH path had been memory ->
    // product (a DSP multiplier) -> checks -> error register). A MATMUL's pixel product and
    // those bounds ("a + n > limit" is "a > limit or n > limit - a": limit - a does not wait
    // for n) are registered in the cycle before FETCH, and FETCH makes every check of both
    // instructions but a LOAD_WEIGHTS' rows, whose bounds it registers. DECODE: those rows
    // against their bounds, the OR of every flag and the error codes in fpga/isa.py's order.
    reg [3:0] err_pre;                       // opcode, reserved bits, LOAD_WEIGHTS, NOWEIGHTS
    always @* begin
        err_pre = E_NONE;
        if (op != OP_LW && op != OP_MM && op != OP_HALT)
            err_pre = E_OPCODE;
        else if ((op == OP_LW && (w & ~USED_LW) != 128'd0)
              || (op == OP_MM && (w & ~USED_MM) != 128'd0)
              || (op == OP_HALT && (w & ~USED_HALT) != 128'd0)
              || (op == OP_MM && ((!f_shift && f_fill != 8'd0) || (!f_accin && f_acc != 20'd0)
                                  || (!byte_mode && f_outch != 12'd0))))
            err_pre = E_RESERVED;
        else if (op == OP_LW) begin
            if (f_rows == 8'd0 || {24'd0, f_rows} > L_ROWS || f_cols == 8'd0 || {24'd0, f_cols} > L_COLS)
                err_pre = E_TILE;
            // its memory ranges (WRANGE): the addresses in FETCH, the rows in DECODE (below)
        end else if (op == OP_MM && tile_rows == 8'd0)
            err_pre = E_NOWEIGHTS;
    end

    // A LOAD_WEIGHTS' memory ranges, "a + rows > depth" as "a > depth or rows > depth - a":
    // FETCH registers the flags and the bounds, DECODE compares the rows (timing closure: the
    // subtraction and the compare behind it were two 32-bit carry chains in FETCH). The rows are
    // at most 255, so a bound of 256 or more never fails: FETCH registers whether the bound is
    // below 256 and its low 8 bits, and DECODE's compare is 8 bits wide (a 25-bit one had been
    // DECODE's longest path, into the state's enables).
    wire        lw_past = ({8'd0, f_waddr} > L_WDEPTH) || ({8'd0, f_baddr} > L_BDEPTH)
                       || ({8'd0, f_saddr} >= L_SDEPTH);
    wire [24:0] w_room = L_WDEPTH[24:0] - {1'b0, f_waddr};
    wire [24:0] b_room = L_BDEPTH[24:0] - {1'b0, f_baddr};
    wire        w_room_small = (w_room[24:8] == 17'd0);
    wire        b_room_small = (b_room[24:8] == 17'd0);

    // A MATMUL's terms, named after the check they belong to. The pixel count and the bounds
    // it is compared with (each *_room; 25 bits: DDEPTH and PDEPTH are at most 2^20, and a
    // term whose subtraction would wrap is decided by its flag first) are computed from `w_q`
    // in every cycle and registered, so that in FETCH they are the word's (`w_q` holds it from
    // the cycle before FETCH on) and FETCH compares registers (timing closure: the product had
    // been registered in FETCH and compared in DECODE, in front of the failure flag and the
    // state's enables, the 16x16 top's longest path).
    wire        pixsum = (f_mode == M_PIXSUM);
    wire        shape_zero = (f_h == 12'd0 || f_w == 12'd0);
    // the overlap checks: channels (byte modes) or accumulation (the others) clash, and then the
    // two windows [a, a + n) and [b, b + m) intersect: (a < b or n > a - b) and (b < a or m > b - a)
    wire [19:0] ovl_a = byte_mode ? f_in : f_acc;
    reg  [23:0] pix_r;                       // height x width
    reg  [24:0] in_room_r, acc_room_r, out_room_r, ovl_a_gap_r, ovl_b_gap_r;
    always @(posedge clk) begin
        pix_r <= f_h * f_w;
        in_room_r <= L_DDEPTH[24:0] - {5'd0, f_in};
        acc_room_r <= L_PDEPTH[24:0] - {5'd0, f_acc};
        out_room_r <= (byte_mode ? L_DDEPTH[24:0] : L_PDEPTH[24:0]) - {5'd0, f_out};
        ovl_a_gap_r <= {5'd0, ovl_a} - {5'd0, f_out};
        ovl_b_gap_r <= {5'd0, f_out} - {5'd0, ovl_a};
    end
    wire [24:0] pix25 = {1'b0, pix_r};
    /* verilator coverage_off */
    wire [31:0] pix32 = {8'd0, pix_r};
    /* verilator coverage_on */
    // FETCH: each check a flag. The input window's channels: in_ch + slots > CMAX (in_ch >
    // CMAX among them), against the tile's bound above.
    wire        in_past = ({12'd0, f_in} > L_DDEPTH) || in_ch_over;
    wire        acc_past = ({12'd0, f_acc} > L_PDEPTH);
    // (a PIXSUM's one entry past the end: out + 1 > PDEPTH, i.e. out == PDEPTH once out >
    // PDEPTH is out; an equality, no carry chain)
    wire        out_past = byte_mode
                    ? ({12'd0, f_out} > L_DDEPTH) || out_ch_over
                    : ({12'd0, f_out} > L_PDEPTH) || (pixsum && {12'd0, f_out} == L_PDEPTH);
    wire        mm_shape = shape_zero || pix32 > L_DDEPTH;
    wire        mm_in = in_past || pix25 > in_room_r;
    wire        mm_acc = f_accin && (acc_past || pix25 > acc_room_r);
    wire        mm_out = out_past || (!(pixsum && !byte_mode) && pix25 > out_room_r);
    // Whether the channels clash: [in_ch, in_ch + slots) and [out_ch, out_ch + tile_rows)
    // intersect when (in_ch < out_ch or in_ch - out_ch < tile_rows) and (out_ch < in_ch or
    // out_ch - in_ch < slots).
    wire        ch_in_below = (f_inch < f_outch);
    wire        ch_out_below = (f_outch < f_inch);
    wire [11:0] ch_in_gap = f_inch - f_outch;
    wire [11:0] ch_out_gap = f_outch - f_inch;
    wire        ch_clash = (ch_in_below || ch_in_gap < {4'd0, tile_rows})
                        && (ch_out_below || ch_out_gap < f_slots);
    wire        acc_moved = f_accin && f_out != f_acc;
    // the windows intersect (a PIXSUM's window at b is one entry long; n for [a, ..) is always
    // the pixel count)
    wire        ovl_win = ((ovl_a < f_out)
                           || ((!byte_mode && pixsum) ? ovl_a_gap_r == 25'd0 : pix25 > ovl_a_gap_r))
                       && ((f_out < ovl_a) || pix25 > ovl_b_gap_r);

    reg [3:0]  err_pre_q;
    reg        lw_q, lw_past_q;
    reg        w_room_small_q, b_room_small_q;
    reg [7:0]  w_room_q, b_room_q;                   // the bounds' low 8 bits
    reg        mm_q, byte_mode_q, mm_shape_q, mm_in_q, mm_acc_q, mm_out_q, ch_clash_q,
               acc_moved_q, ovl_win_q;
    always @(posedge clk) if (state == S_FETCH) begin
        err_pre_q <= err_pre;
        mm_q <= (op == OP_MM);
        lw_q <= (op == OP_LW);
        lw_past_q <= lw_past;
        w_room_small_q <= w_room_small;
        b_room_small_q <= b_room_small;
        w_room_q <= w_room[7:0];
        b_room_q <= b_room[7:0];
        byte_mode_q <= byte_mode;
        mm_shape_q <= mm_shape;
        mm_in_q <= mm_in;
        mm_acc_q <= mm_acc;
        mm_out_q <= mm_out;
        ch_clash_q <= ch_clash;
        acc_moved_q <= acc_moved;
        ovl_win_q <= ovl_win;
    end

    // DECODE: the registered flags
    wire        ovl_hit = (byte_mode_q ? ch_clash_q : acc_moved_q) && ovl_win_q;
    wire        lw_wrange = lw_past_q || (w_room_small_q && f_rows > w_room_q)
                         || (b_room_small_q && f_rows > b_room_q);
    // Whether the word fails, as one OR of every flag: the state, busy, done, error and the
    // execution's start depend on it alone (timing closure: through the code's priority order
    // below they had been the decoder's longest path). Only error_code waits for the order.
    wire fail = pc_over_q || err_pre_q != E_NONE || (lw_q && lw_wrange)
              || (mm_q && (mm_shape_q || mm_in_q || mm_acc_q || mm_out_q || ovl_hit));
    reg [3:0] err;                           // the code, in the ISA's order
    always @* begin
        err = err_pre_q;
        if (err_pre_q == E_NONE && lw_q && lw_wrange)
            err = E_WRANGE;
        if (err_pre_q == E_NONE && mm_q) begin
            if (mm_shape_q)
                err = E_SHAPE;
            else if (mm_in_q)
                err = E_DBUF;
            else if (mm_acc_q)
                err = E_PBUF;
            else if (mm_out_q)
                err = byte_mode_q ? E_DBUF : E_PBUF;
            else if (ovl_hit)
                err = E_OVERLAP;
        end
    end

    // ---- sequencing ----
    // `busy` is the state's not being S_IDLE, written once as its next value: a start leaves
    // S_IDLE, and only a DECODE that fails or halts returns to it. The top registers copies of
    // busy_next where a select must equal `busy` cycle for cycle without `busy`'s own route
    // (its LUT and wires) in front of it.
    assign busy_next = !rst && ((state == S_IDLE) ? start
                                : !(state == S_DECODE && (fail || op == OP_HALT)));
    always @(posedge clk) busy <= busy_next;
    // 24 + FEED_LATENCY + COLS (FEED_LATENCY = 4: the bank read, the serializers' load and the
    // feeder's two registers); see fpga/cycle_model.py
    localparam [31:0] MM_FIXED = 28 + COLS;
    localparam [31:0] MM_LAST = MM_FIXED - 2;  // for exec_last
    always @(posedge clk) begin
        if (rst) begin
            state <= S_IDLE;
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
                    done <= 1'b0;
                    error <= 1'b0;
                    error_code <= E_NONE;
                    pc <= start_pc;
                    tile_rows <= 8'd0;
                    tile_cols <= 8'd0;
                end
                S_FETCH: begin                      // the word is here: check it
                    state <= S_DECODE;
                    pc_over_q <= pc_over;
                    // the product's part of the length is added in DECODE (timing closure:
                    // the multiplier and an adder behind it were FETCH's longest path)
                    mm_rest_q <= MM_LAST[23:0] + {16'd0, tile_rows}
                              + ((f_mode == M_PIXSUM) ? 24'd1 : 24'd0);
                    // A MATMUL's fields are out a cycle before it executes. Nothing reads
                    // them outside DECODE and EXEC of a MATMUL, and the one before has retired
                    // (its last writes, steered by out_ch, leave the shifter in this cycle).
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
                    last_q <= 1'b0;
                    // The fields an execution reads are latched whatever the checks say (timing
                    // closure: the product's compares decide only the few state and status
                    // registers below): nothing reads them outside EXEC of their instruction.
                    if (op == OP_LW) begin
                        rows <= f_rows;
                        cols <= f_cols;
                        w_addr <= f_waddr;
                        b_addr <= f_baddr;
                        s_addr <= f_saddr;
                        exec_last <= {16'd0, f_rows} - 24'd1;     // rows + 1 cycles
                    end else begin
                        pixels <= pix_r;          // still the word's (w_q holds it)
                        exec_last <= {pix_r[20:0], 3'd0} + mm_rest_q;
                    end
                    // a LOAD_WEIGHTS' checks need no product: its tile is latched on err_pre_q
                    // and its ranges (lw_wrange)
                    if (!pc_over_q && err_pre_q == E_NONE && op == OP_LW && !lw_wrange) begin
                        tile_rows <= f_rows;
                        tile_cols <= f_cols;
                    end
                    if (fail) begin
                        state <= S_IDLE;
                        done <= 1'b1;
                        error <= 1'b1;
                        error_code <= pc_over_q ? E_PC : err;
                    end else if (op == OP_HALT) begin
                        state <= S_IDLE;
                        done <= 1'b1;
                    end else if (op == OP_LW) begin
                        state <= S_EXEC;
                        exec_lw <= 1'b1;
                    end else begin
                        state <= S_EXEC;
                        exec_mm <= 1'b1;
                    end
                end
                default: begin                      // S_EXEC
                    k <= k + 24'd1;
                    last_q <= (k == exec_last);
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
