`default_nettype none
// Bit-serial systolic array of ROWS x COLS SAC cells (weight stationary).
//
// Data: each column takes SLOTS channel slots (column combining) as SLOTS serial bit streams,
// LSB first, one 8-bit word per slot every 8 cycles. All columns are presented aligned and one
// cycle ahead: `col_data_next` holds the bits that enter the columns in the next cycle, when bit
// b of the lane-0 word enters at phase0 == b (pixel p's bits at phase0 == 8p + b, modulo 32).
// Column c's register chain skews its streams by c cycles and pushes them up one stage per
// cycle: stage q holds what entered q cycles ago, and cell (r, c)'s base tap is stage c + r.
// A cell with weight 2^s needs the base tap delayed by s, i.e. stage c + r + s; it selects its
// slot one stage below the base tap and delays it itself (sac_cell.v), so the chain is only as
// long as the cells' base taps need.
//
// Partial sums: every row starts from zero at column 0 (the row's bias or earlier partial sum
// is added where the words leave the row, in relu_quant). Words flow right through the row, one
// cell per cycle, and leave after column COLS-1 as LANES serial streams `row_out`. At cell
// (r, c) lane 0 is at bit phase0 - r - c, the same for every cell of a diagonal d = r + c; the
// array computes the phase once per diagonal and pipelines it from diagonal to diagonal, so
// phase0 must count up by one per cycle while words flow (it does during a MATMUL).
//
// Weights are single buffered: `w_clear` zeroes every cell, then `w_load` writes one row of
// COLS bytes per cycle. The array registers these inputs once before they fan out to the
// cells, so a weight lands one cycle after it is presented. Loading does not overlap a
// multiplication (see docs/microarchitecture.md).
//
// Activity: `active_count` is the number of cells that switched on (one per nonzero weight and
// nonzero data word) COUNT_DELAY cycles earlier, from a pipelined population count (COUNT_DELAY
// is 4 for 64 cells, 5 for 256, 7 for 8,192; elaboration stops if it exceeds
// COUNT_DELAY_MAX, the delay the user of the count tolerates).
module systolic_array #(
    parameter ROWS = 8,
    parameter COLS = 8,
    parameter SLOTS = 8,
    parameter TAPS = 7,
    parameter LANES = 4,
    parameter ACC_BITS = 32,
    parameter ROW_BITS = 8,                 // width of w_row (>= clog2(ROWS))
    parameter COUNT_BITS = 16,              // width of active_count (>= clog2(ROWS*COLS+1))
    parameter COUNT_DELAY_MAX = 20
) (
    input  wire                      clk,
    // weights
    input  wire                      w_clear,
    input  wire                      w_load,
    input  wire [ROW_BITS-1:0]       w_row,
    input  wire [COLS*8-1:0]         w_row_data,
    // data, aligned over all columns, one cycle ahead
    input  wire                      chain_clear,   // hold the chain registers at zero
    input  wire [COLS*SLOTS-1:0]     col_data_next,
    input  wire [4:0]                phase0,
    // results and activity
    output wire [ROWS*LANES-1:0]     row_out,
    output wire [COUNT_BITS-1:0]     active_count
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(ROWS >= 1 && COLS >= 1)) begin : check_rows_and_cols
            ROWS_and_COLS_must_be_positive parameter_check_failed();
        end
        if (!(SLOTS >= 1 && SLOTS <= 8)) begin : check_slots
            SLOTS_must_be_1_to_8 parameter_check_failed();
        end
        if (!(TAPS >= 1 && TAPS <= 7)) begin : check_taps
            TAPS_must_be_1_to_7 parameter_check_failed();
        end
        if (!(LANES == 4 && ACC_BITS == 32)) begin : check_lanes
            LANES_must_be_4_and_ACC_BITS_32 parameter_check_failed();
        end
        if (!((1 << ROW_BITS) >= ROWS)) begin : check_row_bits
            ROW_BITS_must_be_at_least_clog2_ROWS parameter_check_failed();
        end
        if (!((1 << COUNT_BITS) > ROWS * COLS)) begin : check_count_bits
            COUNT_BITS_must_be_at_least_clog2_ROWS_x_COLS_plus_1 parameter_check_failed();
        end
    endgenerate

    localparam DIAGS = ROWS + COLS - 1;

    // ---- per-diagonal phase, pipelined along the diagonals ----
    // phase_next[d]: lane-0 bit index on diagonal d in the next cycle (phase0 + 1 - d);
    // word_end[d]: the lanes whose word shows bit 31 on diagonal d now (phase0 - d == 8l + 31).
    // Diagonal d sees what diagonal d-1 saw one cycle earlier, so one register per diagonal
    // carries each signal on; only diagonal 0 decodes phase0.
    wire [4:0]       phase_next [0:DIAGS-1];
    wire [LANES-1:0] word_end [0:DIAGS-1];
    assign phase_next[0] = phase0 + 5'd1;
    genvar d, l;
    generate
        for (l = 0; l < LANES; l = l + 1) begin : end_decode
            localparam [4:0] LAST = 8 * l + 31;
            assign word_end[0][l] = (phase0 == LAST);
        end
        for (d = 1; d < DIAGS; d = d + 1) begin : diagonal
            reg [4:0]       phase_q;
            reg [LANES-1:0] end_q;
            always @(posedge clk) begin
                phase_q <= phase_next[d-1];
                end_q <= word_end[d-1];
            end
            assign phase_next[d] = phase_q;
            assign word_end[d] = end_q;
        end
    endgenerate

    // ---- weight loading, registered once: one row decode and one copy of the row's bytes
    //      drive all cells (the fan-out, not the cells, would otherwise set the clock) ----
    reg              w_clear_q;
    reg [ROWS-1:0]   w_load_q;
    reg [COLS*8-1:0] w_data_q;
    integer wr;
    always @(posedge clk) begin
        w_clear_q <= w_clear;
        w_data_q <= w_row_data;
        for (wr = 0; wr < ROWS; wr = wr + 1) w_load_q[wr] <= w_load && w_row == wr[ROW_BITS-1:0];
    end

    // ---- columns (register chains) and cells ----
    wire [ROWS*COLS-1:0] active;
    wire [LANES-1:0] psum [0:ROWS-1][0:COLS];

    genvar r, c;
    generate
        for (r = 0; r < ROWS; r = r + 1) begin : row_start
            assign psum[r][0] = {LANES{1'b0}};
        end

        for (c = 0; c < COLS; c = c + 1) begin : col
            // chain[q+1] is stage q (q = 0..LEN-1); chain[0] is the input, one stage below
            // stage 0. Cell (r, c) reads stage c + r - 1, the slots just below its base tap.
            localparam LEN = c + ROWS - 1;
            wire [(LEN+1)*SLOTS-1:0] chain;
            assign chain[SLOTS-1:0] = col_data_next[c*SLOTS +: SLOTS];
            if (LEN > 0) begin : stages
                reg [LEN*SLOTS-1:0] data_q;
                always @(posedge clk) begin
                    if (chain_clear) data_q <= {LEN*SLOTS{1'b0}};
                    else data_q <= chain[LEN*SLOTS-1:0];
                end
                assign chain[(LEN+1)*SLOTS-1:SLOTS] = data_q;
            end

            for (r = 0; r < ROWS; r = r + 1) begin : pe
                sac_cell #(.SLOTS(SLOTS), .TAPS(TAPS), .LANES(LANES)) u_cell (
                    .clk(clk),
                    .w_clear(w_clear_q),
                    .w_load(w_load_q[r]),
                    .w_in(w_data_q[c*8 +: 8]),
                    .slots_next(chain[(c + r)*SLOTS +: SLOTS]),
                    .phase_next(phase_next[r + c]),
                    .word_end(word_end[r + c]),
                    .psum_in(psum[r][c]),
                    .psum_out(psum[r][c+1]),
                    .active(active[r*COLS + c])
                );
            end
        end

        for (r = 0; r < ROWS; r = r + 1) begin : result
            assign row_out[r*LANES +: LANES] = psum[r][COLS];
        end
    endgenerate

    // ---- zero-skipping energy proxy: cells switching on, pipelined sum ----
    popcount_pipe #(.N(ROWS*COLS), .W(COUNT_BITS), .MAX_LATENCY(COUNT_DELAY_MAX)) u_count (
        .clk(clk), .bits(active), .count(active_count));
endmodule
`default_nettype wire
