`default_nettype none
// 8-bit MAC cell: the seed paper's baseline for the resource comparison with sac_cell.
//
// Same ports, timing and role as sac_cell, but the cell holds a full 8-bit signed weight and
// multiplies the bit-serial input by it with a serial-parallel multiplier (the paper: "8 1-bit
// full adders for multiplication"), then adds the product into the same bit-serial lanes.
// Without an index field it cannot combine columns: it always reads channel slot 0, tap 0.
//
// Multiplier: while the 8 data bits of a word arrive (LSB first), T = S + x_b * w; the product
// bit is T[0] and S <= T >>> 1. After the 8th bit S holds product >> 8, which is handed to the
// lane's `high` register; that register shifts out product bits 8..31 (arithmetically, so the
// sign extends) while the multiplier starts on the next word of the next lane.
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
    input  wire [TAPS*SLOTS-1:0]    taps,       // only slot 0, tap 0 is used
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [4:0]               phase,
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

    reg signed [7:0] weight;
    always @(posedge clk) begin
        if (w_clear) weight <= 8'sd0;
        else if (w_load) weight <= w_in;
    end

    wire nonzero = (weight != 8'sd0);
    wire data_bit = nonzero & taps[0];
    wire [1:0] sel_lane = phase[4:3];       // tap 0: lane L receives data while its bit < 8
    wire       first_bit = (phase[2:0] == 3'd0);
    wire       last_bit = (phase[2:0] == 3'd7);

    // serial-parallel multiplier, shared by the lanes (one word at a time)
    reg  signed [9:0] acc_s;
    wire signed [9:0] s_eff = first_bit ? 10'sd0 : acc_s;
    wire signed [9:0] t_sum = s_eff + (data_bit ? {{2{weight[7]}}, weight} : 10'sd0);
    wire [LANES-1:0] first_one;
    always @(posedge clk) acc_s <= t_sum >>> 1;

    genvar l;
    generate
        for (l = 0; l < LANES; l = l + 1) begin : lane
            localparam [4:0] START = 8 * l;
            localparam [1:0] ID = l;
            reg signed [8:0] high;  // product bits 8.. of this lane's word
            reg carry;
            reg seen_one;           // a 1 data bit arrived: the product is nonzero, lane on
            wire start = (phase == START);
            wire mine = (sel_lane == ID);
            wire one = mine & data_bit;
            wire seen = seen_one & ~start;
            wire p = mine ? t_sum[0] : high[0];
            wire c = carry & ~start;
            wire s = psum_in[l] ^ p ^ c;
            assign first_one[l] = one & ~seen;
            always @(posedge clk) begin
                if (mine && last_bit) high <= t_sum[9:1];
                else high <= high >>> 1;
                if (start | seen | one) begin
                    psum_out[l] <= s;
                    carry <= (psum_in[l] & p) | (psum_in[l] & c) | (p & c);
                    seen_one <= seen | one;
                end else begin
                    psum_out[l] <= psum_in[l];
                end
            end
        end
    endgenerate
    assign active = |first_one;
endmodule
`default_nettype wire
