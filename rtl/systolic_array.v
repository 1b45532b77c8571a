`default_nettype none
// Bit-serial systolic array of ROWS x COLS SAC cells (weight stationary).
//
// Data: each column takes SLOTS channel slots (column combining) as SLOTS serial bit streams,
// LSB first, one 8-bit word per slot every 8 cycles. All columns are presented aligned: bit b of the lane-0 word enters when
// phase0 == b (pixel p's bits at phase0 == 8p + b, modulo 32). The array skews column c by c
// cycles itself, then pushes the bits up the column's register chain one stage per cycle. Cell
// (r, c) taps chain positions c + r + s for s = 0..TAPS-1: stage s further along = multiplied
// by 2^s. So the chain both moves data up the column and makes the power-of-two shifts.
//
// Partial sums: row r starts from its initial values (bias or earlier partial sums), loaded by
// `init_load[r]` one cycle before the word starts at column 0 and shifted out LSB first by a
// per-lane register; they flow right through the row, one cell per cycle, and leave after
// column COLS-1 as LANES serial streams `row_out`. Word boundaries follow from phase0: at cell
// (r, c) lane 0 is at bit phase0 - r - c; at row r's output at bit phase0 - r - COLS.
//
// Weights are single buffered: `w_clear` zeroes every cell, then `w_load` writes one row of
// COLS bytes per cycle. Loading does not overlap a multiplication (see docs/microarchitecture.md).
module systolic_array #(
    parameter ROWS = 8,
    parameter COLS = 8,
    parameter SLOTS = 8,
    parameter TAPS = 7,
    parameter LANES = 4,
    parameter ACC_BITS = 32,
    parameter ROW_BITS = 8,                 // width of w_row (>= clog2(ROWS))
    parameter COUNT_BITS = 16               // width of active_count (>= clog2(ROWS*COLS+1))
) (
    input  wire                      clk,
    // weights
    input  wire                      w_clear,
    input  wire                      w_load,
    input  wire [ROW_BITS-1:0]       w_row,
    input  wire [COLS*8-1:0]         w_row_data,
    // data, aligned over all columns
    input  wire                      chain_clear,   // hold the skew and chain registers at zero
    input  wire [COLS*SLOTS-1:0]     col_data,
    input  wire [4:0]                phase0,
    // row initial values
    input  wire [ROWS-1:0]           init_load,
    input  wire [ROWS*ACC_BITS-1:0]  init_value,
    // results and activity
    output wire [ROWS*LANES-1:0]     row_out,
    output reg  [COUNT_BITS-1:0]     active_count
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

    wire [ROWS*COLS-1:0] active;
    wire [LANES-1:0] psum [0:ROWS-1][0:COLS];

    genvar r, c, l;
    generate
        // ---- row injectors: one shift register per lane ----
        for (r = 0; r < ROWS; r = r + 1) begin : inject
            localparam [4:0] R5 = r;
            /* verilator lint_off UNUSEDSIGNAL */
            wire [4:0] next_pos = phase0 + 5'd1 - R5;     // lane-0 bit at (r, 0) next cycle
            /* verilator lint_on UNUSEDSIGNAL */
            wire [1:0] load_lane = next_pos[4:3];
            for (l = 0; l < LANES; l = l + 1) begin : lane
                localparam [1:0] ID = l;
                reg [ACC_BITS-1:0] value;
                always @(posedge clk) begin
                    if (init_load[r] && load_lane == ID) value <= init_value[r*ACC_BITS +: ACC_BITS];
                    else value <= {1'b0, value[ACC_BITS-1:1]};
                end
                assign psum[r][0][l] = value[0];
            end
        end

        // ---- columns: skew + register chain, and the cells ----
        for (c = 0; c < COLS; c = c + 1) begin : col
            // chain position 0 is the input; positions 1..LEN-1 are registers. Column c is
            // delayed by c positions before its first cell's taps (the systolic skew).
            localparam LEN = c + ROWS + TAPS - 1;
            reg  [(LEN-1)*SLOTS-1:0] data_q;
            wire [LEN*SLOTS-1:0] data_chain = {data_q, col_data[c*SLOTS +: SLOTS]};
            always @(posedge clk) begin
                if (chain_clear) data_q <= {(LEN-1)*SLOTS{1'b0}};
                else data_q <= data_chain[(LEN-1)*SLOTS-1:0];
            end

            for (r = 0; r < ROWS; r = r + 1) begin : pe
                localparam [4:0] SKEW = r + c;
                sac_cell #(.SLOTS(SLOTS), .TAPS(TAPS), .LANES(LANES)) u_cell (
                    .clk(clk),
                    .w_clear(w_clear),
                    .w_load(w_load && w_row == r),
                    .w_in(w_row_data[c*8 +: 8]),
                    .taps(data_chain[(c + r)*SLOTS +: TAPS*SLOTS]),
                    .phase(phase0 - SKEW),
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

    // zero-skipping energy proxy: cells switching on this cycle (one per nonzero pair)
    integer i;
    always @* begin
        active_count = {COUNT_BITS{1'b0}};
        for (i = 0; i < ROWS*COLS; i = i + 1)
            active_count = active_count + {{(COUNT_BITS-1){1'b0}}, active[i]};
    end
endmodule
`default_nettype wire
