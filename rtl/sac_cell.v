`default_nettype none
// Selector-Accumulator (SAC) cell: one power-of-two weight of the bit-serial systolic array.
//
// The cell holds one packed byte [index:3][sign:1][exp:4] (sign 1 = positive, exponent code
// 1..TAPS = 2^-6..2^0, code 0 = zero weight, codes above TAPS reserved and read as zero).
// Multiplying the bit-serial input by 2^(code-1) is a delay of s = code-1 cycles.
//
// Selector: the column's register chain brings the SLOTS channel streams up to the cell; the
// cell picks slot `index` one chain stage below its base tap and puts it through its own delay
// line, read at stage s: the result is the base tap s stages further along the chain, i.e.
// the stream multiplied by 2^s. On a Xilinx FPGA the delay line with its read address is one
// SRL16E, so the selector costs an 8:1 multiplexer and one LUT instead of a 56:1 multiplexer
// over seven chain taps (docs/microarchitecture.md has the numbers). A zero weight selects
// nothing (stage 7 of a delay line that only ever sees zeros).
//
// Partial sums stream through the row LSB first, one bit per cycle, 32 bits per word. A new
// 8-bit input vector enters every 8 cycles, so LANES = 32/8 words are in flight per row at any
// time; lane L carries pixels p with p % LANES == L. Everything the cell needs to know about
// word boundaries comes from signals the array computes once per diagonal: `phase_next`, the
// bit index of lane 0's word at this cell in the next cycle, and `word_end`, the lanes whose
// word shows its bit 31 this cycle.
//
// Data lane: the delayed data bits of one input word occupy 8 consecutive word bits (s..s+7)
// of exactly one lane; the cell latches that lane number at the start of each such window
// (two flip-flops, no arithmetic on the phase).
//
// Accumulation, per lane: a full adder adds the lane's data bit to the incoming partial-sum
// bit; its carry is cleared after bit 31 (a synchronous reset), so sums wrap modulo 2^32 like
// the golden model. A negative weight subtracts with a - y = ~(~a + y): the sum bit is the same
// as for an addition and only the carry sees the inverted partial sum, so negation costs no
// state and no extra logic level. A zero data word or a zero weight leaves the lane's carry at
// zero and its partial sum passing through unchanged (zero skipping).
//
// `active` marks the first 1 bit of each data word that reaches the cell through a nonzero
// weight: once per (nonzero weight, nonzero word) pair, the zero-skipping energy proxy.
module sac_cell #(
    parameter SLOTS = 8,            // channel slots per column (column combining, max 8)
    parameter TAPS = 7,             // exponent codes 1..TAPS (delays 0..TAPS-1)
    parameter LANES = 4             // 32-bit words in flight per row (ACC_BITS / DATA_BITS)
) (
    input  wire                     clk,
    input  wire                     w_clear,    // zero the weight (before a tile load)
    input  wire                     w_load,     // load w_in
    input  wire [7:0]               w_in,
    input  wire [SLOTS-1:0]         slots_next, // the column's slots one stage below the base tap
    input  wire [4:0]               phase_next, // bit index of lane 0's word here, next cycle
    input  wire [LANES-1:0]         word_end,   // lane l's word is at bit 31 here this cycle
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

    localparam [31:0] TAPS32 = TAPS;        // 32 bits: parameters may arrive as -G overrides
    localparam [2:0]  NONE = 3'd7;          // delay-line stage of a zero weight

    // ---- weight: slot index, delay s = code - 1 (NONE for a zero weight), sign ----
    // In the array every row of a column sees the same w_in, so this decoding is shared.
    wire [3:0] code = w_in[3:0];
    reg  [2:0] code_delay;
    always @* begin
        case (code)                     // a table, not a subtraction: no carry chain
            4'd1: code_delay = 3'd0;
            4'd2: code_delay = 3'd1;
            4'd3: code_delay = 3'd2;
            4'd4: code_delay = 3'd3;
            4'd5: code_delay = 3'd4;
            4'd6: code_delay = 3'd5;
            4'd7: code_delay = 3'd6;
            default: code_delay = NONE;
        endcase
        if ({28'd0, code} > TAPS32) code_delay = NONE;
    end
    reg  [2:0] index, shift;
    reg        positive;
    initial shift = NONE;               // configured as a zero weight: nothing enters the delay line
    always @(posedge clk) begin
        if (w_clear) begin
            index <= 3'd0;
            shift <= NONE;
            positive <= 1'b0;
        end else if (w_load) begin
            index <= w_in[7:5];
            shift <= code_delay;
            positive <= w_in[4];
        end
    end

    // ---- selector: slot mux, then the delay line read at stage `shift` ----
    wire [7:0] slots8 = {{(8-SLOTS){1'b0}}, slots_next};   // slots past SLOTS read as zero
    wire       base = (shift != NONE) & slots8[index];
    reg  [7:0] delay;
    initial delay = 8'd0;               // starts empty, like the FPGA's configured SRL
    always @(posedge clk) delay <= {delay[6:0], base};
    wire       data_bit = delay[shift];  // the base tap `shift` stages up the chain

    // ---- data lane and zero skipping ----
    // The window of a word's 8 data bits starts where phase - shift is a multiple of 8; `wrap`
    // is the cycle before. There the next phase's upper bits name the lane (no borrow).
    wire       wrap = (phase_next[2:0] == shift);
    reg  [1:0] lane;                    // lane of the data bits now at the tap
    reg        seen;                    // a 1 bit of this data word has arrived
    always @(posedge clk) begin
        if (wrap) lane <= phase_next[4:3];
        seen <= wrap ? 1'b0 : (seen | data_bit);
    end
    assign active = data_bit & ~seen;

    // ---- four bit-serial accumulation lanes ----
    genvar l;
    generate
        for (l = 0; l < LANES; l = l + 1) begin : lane_acc
            localparam [1:0] ID = l;
            reg  carry;
            wire y = data_bit & (lane == ID);
            wire a = psum_in[l];
            wire a_eff = a ^ ~positive;         // a - y = ~(~a + y)
            always @(posedge clk) begin
                psum_out[l] <= a ^ y ^ carry;
                if (word_end[l]) carry <= 1'b0;
                else carry <= (a_eff & y) | (a_eff & carry) | (y & carry);
            end
        end
    endgenerate
endmodule
`default_nettype wire
