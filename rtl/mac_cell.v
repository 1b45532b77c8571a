`default_nettype none
// 8-bit MAC cell: the seed paper's baseline for the resource comparison with sac_cell.
//
// Same ports, timing, throughput and role as sac_cell (4 bit-serial 32-bit lanes, a new 8-bit
// input every 8 cycles, the same per-diagonal phase signals, zero-skipping activity), built
// with the same care, but the cell holds a full 8-bit signed weight and multiplies the
// bit-serial input by it with a serial-parallel multiplier (the paper: "8 1-bit full adders
// for multiplication"), then adds the product into the lanes. Without an index field it cannot
// combine columns: it always reads channel slot 0 at its base tap (no shift).
//
// Multiplier, shared by the lanes: while the 8 data bits of a word arrive (LSB first),
// T = S + x_b * w; the product bit is T[0] and S <= T >>> 1. After the 8th bit, T >>> 1 holds
// product bits 8..15, handed to the `high` register, which shifts them out during the next 8
// cycles while the multiplier works on the next word. From bit 16 on a word's product bits are
// its sign, kept per lane (weight negative and word nonzero).
module mac_cell #(
    parameter SLOTS = 8,
    parameter TAPS = 7,
    parameter LANES = 4
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

    // serial-parallel multiplier and the high half of the last product
    reg  [7:0] s;
    wire [8:0] t = {s[7], s} + (x ? {weight[7], weight} : 9'd0);
    reg  [7:0] high;
    always @(posedge clk) begin
        s <= wrap ? 8'd0 : t[8:1];
        high <= wrap ? t[8:1] : {high[7], high[7:1]};
    end
    wire product_negative = weight[7] & (seen | one);   // at the window's last bit

    genvar l;
    generate
        for (l = 0; l < LANES; l = l + 1) begin : lane_acc
            localparam [1:0] ID = l;
            localparam [1:0] AFTER = l + 1;
            reg  carry;
            reg  sign;                          // its product's sign, from bit 16 on
            always @(posedge clk) if (wrap && lane == ID) sign <= product_negative;
            // lane l's word is in its data byte, in its high byte (bits 8..15) or past both
            wire y = (lane == ID) ? t[0] : (lane == AFTER) ? high[0] : sign;
            wire a = psum_in[l];
            always @(posedge clk) begin
                psum_out[l] <= a ^ y ^ carry;
                if (word_end[l]) carry <= 1'b0;
                else carry <= (a & y) | (a & carry) | (y & carry);
            end
        end
    endgenerate
endmodule
`default_nettype wire
