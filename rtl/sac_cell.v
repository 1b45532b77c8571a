`default_nettype none
// Selector-Accumulator (SAC) cell: one power-of-two weight of the bit-serial systolic array.
//
// The cell holds one packed byte [index:3][sign:1][exp:4] (sign 1 = positive, exponent code
// 1..7 = 2^-6..2^0, code 0 = zero weight, codes 8..15 reserved and read as zero). Multiplying
// the bit-serial input by 2^(code-1) is a delay: the cell picks, from the column's register
// chain, the tap that is (code-1) stages further along, in the channel slot `index`.
//
// Partial sums stream through the row LSB first, one bit per cycle, 32 bits per word. A new
// 8-bit input vector enters every 8 cycles, so LANES = 32/8 words are in flight per row at any
// time; lane L carries pixels p with p % LANES == L. `phase` is the bit index of lane 0's word at
// this cell (lane L is at phase - 8L), supplied by the array so every cell agrees on word
// boundaries without per-cell counters.
//
// Per lane: the selected data bit is negated for negative weights with the serial
// two's-complement rule (copy up to and including the first 1, then invert), and added to the
// incoming partial sum with a full adder whose carry is cleared at each word start, so the
// result wraps modulo 2^32 like the golden model. Zero skipping: a lane stays switched off,
// its state frozen and the partial sum forwarded unchanged, until the first 1 bit of its data
// word arrives through a nonzero weight (before that bit it would only add zeros). A zero
// weight or a zero word never switches it on. `active` pulses once per such switch-on, i.e.
// once per (nonzero weight, nonzero word) pair: the zero-skipping energy proxy.
module sac_cell #(
    parameter SLOTS = 8,            // channel slots per column (column combining, max 8)
    parameter TAPS = 7,             // exponent codes 1..7
    parameter LANES = 4             // 32-bit words in flight per row (ACC_BITS / DATA_BITS)
) (
    input  wire                     clk,
    input  wire                     w_clear,    // zero the weight (before a tile load)
    input  wire                     w_load,     // load w_in
    input  wire [7:0]               w_in,
    input  wire [TAPS*SLOTS-1:0]    taps,       // taps[s*SLOTS + j]: slot j delayed by s stages
    input  wire [4:0]               phase,      // bit index of lane 0's word at this cell
    input  wire [LANES-1:0]         psum_in,
    output reg  [LANES-1:0]         psum_out,
    output wire                     active
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(SLOTS >= 1 && SLOTS <= 8)) begin : check_slots
            SLOTS_must_be_1_to_8 parameter_check_failed();
        end
        if (!(TAPS >= 1 && TAPS <= 7)) begin : check_taps
            TAPS_must_be_1_to_7 parameter_check_failed();
        end
        if (!(LANES == 4)) begin : check_lanes
            LANES_must_be_4_for_8_bit_data_and_32_bit_words parameter_check_failed();
        end
    endgenerate

    localparam [31:0] SLOTS32 = SLOTS;     // 32 bits: parameters may arrive as -G overrides
    localparam [31:0] TAPS32 = TAPS;

    reg [7:0] weight;
    always @(posedge clk) begin
        if (w_clear) weight <= 8'd0;
        else if (w_load) weight <= w_in;
    end

    wire [2:0] index = weight[7:5];
    wire       positive = weight[4];
    wire [3:0] code = weight[3:0];
    wire       valid = (code != 4'd0) && (code <= TAPS32[3:0]);
    wire [2:0] shift = code[2:0] - 3'd1;          // only meaningful when valid

    // the selector: one tap out of TAPS x SLOTS
    wire [5:0] sel = {3'd0, shift} * SLOTS32[5:0] + {3'd0, index};
    wire data_bit = valid & taps[sel];
    // the tapped bit belongs to the lane whose word is at bit (phase - 8L) in [shift, shift+8)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [4:0] lane_pos = phase - {2'd0, shift};   // low bits: bit index inside the data byte
    /* verilator lint_on UNUSEDSIGNAL */
    wire [1:0] sel_lane = lane_pos[4:3];

    wire [LANES-1:0] first_one;
    genvar l;
    generate
        for (l = 0; l < LANES; l = l + 1) begin : lane
            localparam [4:0] START = 8 * l;
            localparam [1:0] ID = l;
            reg carry;      // full-adder carry
            reg seen_one;   // a 1 bit has arrived in this word: lane on, negation inverting
            wire start = (phase == START);
            wire p = (sel_lane == ID) & data_bit;
            wire seen = seen_one & ~start;
            wire n = positive ? p : (p ^ seen);
            wire c = carry & ~start;
            wire s = psum_in[l] ^ n ^ c;
            assign first_one[l] = p & ~seen;
            always @(posedge clk) begin
                if (start | seen | p) begin
                    psum_out[l] <= s;
                    carry <= (psum_in[l] & n) | (psum_in[l] & c) | (n & c);
                    seen_one <= seen | p;
                end else begin
                    psum_out[l] <= psum_in[l];  // gated: forward the partial sum unchanged
                end
            end
        end
    endgenerate
    assign active = |first_one;
endmodule
`default_nettype wire
