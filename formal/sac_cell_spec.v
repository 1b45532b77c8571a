// The arithmetic one SAC cell must perform on one pixel, written from docs/conventions.md
// ("SAC family": power-of-two weights, the packed cell byte, the array reference), not from
// rtl/sac_cell.v. Combinational, word level: no bits, lanes or cycles.
//
//   packed byte [index:3][sign:1][exp:4]: index = the weight's channel inside its column group
//   (the slot), sign 1 = positive, 0 = negative; exponent code 1..7 = 2^emin .. 2^(emin+6), in
//   integer form w_int = sign * 2^(code - 1); code 0 is the zero weight and the reserved codes
//   8..15 read as a zero weight too.
//   acc = init + w_int * x, 32-bit two's complement, wrapping modulo 2^32; x is the uint8 datum
//   of the weight's channel (slots past the column's SLOTS do not exist: x = 0).
//   One activity pair when the weight and the datum are both nonzero (count_active).
`default_nettype none
module sac_cell_spec #(
    parameter SLOTS = 8                 // channel slots of the column (1..8)
) (
    input  wire [7:0]  packed_w,        // the packed cell byte
    input  wire [63:0] slot_data,       // the 8 slots' uint8 data of this pixel (slot k: [8k +: 8])
    input  wire [31:0] init,            // the partial sum that enters (int32)
    output wire [31:0] acc,             // init + w_int * x  (mod 2^32)
    output wire        pair             // weight and datum both nonzero
);
    wire [2:0]  index = packed_w[7:5];
    wire        sign = packed_w[4];
    wire [3:0]  code = packed_w[3:0];
    wire        valid = code >= 4'd1 && code <= 4'd7;
    wire [7:0]  x = (index < SLOTS) ? slot_data[index*8 +: 8] : 8'd0;
    // |w_int| * x = x * 2^(code - 1): a shift (a 32 x 32 multiplier per time step made the
    // bounded check crawl); w_int * x is that product, negated for sign 0
    wire [31:0] product = valid ? ({24'd0, x} << (code - 4'd1)) : 32'd0;
    assign acc = sign ? init + product : init - product;
    assign pair = valid && x != 8'd0;
endmodule
`default_nettype wire
