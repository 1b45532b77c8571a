`default_nettype none
// 8-bit MAC cell: the seed paper's baseline for the resource comparison with sac_cell.
//
// Same ports, timing, throughput and role as sac_cell (4 bit-serial 32-bit lanes, a new 8-bit
// input every 8 cycles, the same per-diagonal phase signals, zero-skipping activity), but the
// cell holds a full 8-bit signed weight and multiplies the bit-serial input by it with a
// serial-parallel multiplier (the paper: "8 1-bit full adders for multiplication"), then adds
// the product into the lanes. Without an index field it cannot combine columns: it always
// reads channel slot 0 at its base tap (no shift).
//
// Serial-parallel multiplier: while the 8 data bits of a word arrive (LSB first),
// T = S + x_b * w, the product bit is T[0] and S <= T >>> 1; afterwards S keeps shifting
// right arithmetically, so product bits 8..15 come out of S and every later bit is its sign.
// A product takes 32 cycles to leave the multiplier, and a lane's next word arrives 32 cycles
// after its last, so MULTIPLIERS chooses between two cells of the same throughput:
//   LANES (default): one multiplier per lane, each with its own 8-bit S, as the seed's
//     released cell has it (four MACs behind one weight register); the paper's baseline.
//   1: one multiplier shared by the lanes: after a word's 8th bit its S (product bits 8..15)
//     moves to a `high` register that shifts them out while the multiplier takes the next
//     word, and the sign of each lane's product is kept in one flip-flop per lane.
module mac_cell #(
    parameter SLOTS = 8,
    parameter TAPS = 7,
    parameter LANES = 4,
    parameter MULTIPLIERS = LANES   // one per lane (the paper's cell) or 1, shared
) (
    input  wire                     clk,
    input  wire                     w_clear,
    input  wire                     w_load,
    input  wire [7:0]               w_in,       // signed weight
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [SLOTS-1:0]         slots_next, // only slot 0 is used
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [4:0]               phase_next,
    input  wire [LANES-1:0]         word_end,
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
        if (!(MULTIPLIERS == 1 || MULTIPLIERS == LANES)) begin : check_multipliers
            MULTIPLIERS_must_be_1_or_LANES parameter_check_failed();
        end
    endgenerate

    reg [7:0] weight;
    reg       nonzero;
    always @(posedge clk) begin
        if (w_clear) begin
            weight <= 8'd0;
            nonzero <= 1'b0;
        end else if (w_load) begin
            weight <= w_in;
            nonzero <= (w_in != 8'd0);
        end
    end

    // data at the base tap, the word's window of 8 bits and its lane (as in sac_cell, s = 0)
    reg        x;
    always @(posedge clk) x <= slots_next[0];
    wire       wrap = (phase_next[2:0] == 3'd0);    // the window's last bit is here now
    wire       one = x & nonzero;
    reg  [1:0] lane;
    reg        seen;
    always @(posedge clk) begin
        if (wrap) lane <= phase_next[4:3];
        seen <= wrap ? 1'b0 : (seen | one);
    end
    assign active = one & ~seen;

    // the lanes' product bits: this cycle's bit of each lane's word
    wire [LANES-1:0] y;
    genvar l;
    generate
        if (MULTIPLIERS == LANES) begin : per_lane
            for (l = 0; l < LANES; l = l + 1) begin : mul
                localparam [1:0] ID = l;
                reg  [7:0] s;
                wire       x_here = x & (lane == ID);       // only its own word's data bits
                wire [8:0] t = {s[7], s} + (x_here ? {weight[7], weight} : 9'd0);
                assign y[l] = t[0];
                // cleared the cycle before its next word's first data bit
                always @(posedge clk) s <= (wrap && phase_next[4:3] == ID) ? 8'd0 : t[8:1];
            end
        end else begin : shared
            // one multiplier and the high half of the last product
            reg  [7:0] s;
            wire [8:0] t = {s[7], s} + (x ? {weight[7], weight} : 9'd0);
            reg  [7:0] high;
            always @(posedge clk) begin
                s <= wrap ? 8'd0 : t[8:1];
                high <= wrap ? t[8:1] : {high[7], high[7:1]};
            end
            wire product_negative = weight[7] & (seen | one);   // at the window's last bit
            for (l = 0; l < LANES; l = l + 1) begin : mul
                localparam [1:0] ID = l;
                localparam [1:0] AFTER = l + 1;
                reg  sign;                      // its product's sign, from bit 16 on
                always @(posedge clk) if (wrap && lane == ID) sign <= product_negative;
                // lane l's word is in its data byte, in its high byte (bits 8..15) or past both
                assign y[l] = (lane == ID) ? t[0] : (lane == AFTER) ? high[0] : sign;
            end
        end

        // four bit-serial accumulation lanes: a full adder each
        for (l = 0; l < LANES; l = l + 1) begin : lane_acc
            reg  carry;
            wire a = psum_in[l];
            always @(posedge clk) begin
                psum_out[l] <= a ^ y[l] ^ carry;
                if (word_end[l]) carry <= 1'b0;
                else carry <= (a & y[l]) | (a & carry) | (y[l] & carry);
            end
        end
    endgenerate
endmodule
`default_nettype wire
