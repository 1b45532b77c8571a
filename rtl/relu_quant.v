`default_nettype none
// ReLU & quantization block of one array row.
//
// Deserialises the row's LANES bit-serial result lanes (LSB first, 32-bit words; lane L is at
// bit phase - 8L), adds the word's initial value `init` (the row's bias or the pixel's earlier
// partial sum, presented in the cycle the word's bit 31 arrives), and one cycle after that
// presents it with `valid` for one cycle: `raw` is the 32-bit two's-complement accumulator
// (wrapping modulo 2^32 like the golden model) and `result` the output byte of the mode: 0 ReLU & quantize clip(acc >>> SHIFT, 0, 255), 1 binary (acc >= 0). Modes 2 and 3 use
// `raw`. A word completes every 8 cycles, one lane at a time, so one output port is enough.
module relu_quant #(
    parameter LANES = 4,
    parameter ACC_BITS = 32,
    parameter SHIFT = 6
) (
    input  wire                 clk,
    input  wire [LANES-1:0]     serial_in,
    input  wire [4:0]           phase,
    input  wire [1:0]           mode,
    input  wire [ACC_BITS-1:0]  init,
    output reg                  valid,
    output reg  [ACC_BITS-1:0]  raw,
    output wire [7:0]           result
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(LANES == 4 && ACC_BITS == 32)) begin : check_lanes
            LANES_must_be_4_and_ACC_BITS_32 parameter_check_failed();
        end
        if (!(SHIFT >= 0 && SHIFT < ACC_BITS)) begin : check_shift
            SHIFT_must_be_0_to_ACC_BITS_minus_1 parameter_check_failed();
        end
    endgenerate

    localparam [1:0] MODE_BINARY = 2'd1;

    // per lane: collect bits 0..30; on the cycle bit 31 arrives the word is complete. Lane l
    // shows bit 31 at phase 8l + 31 (mod 32): phase 31, 7, 15, 23, so phase[2:0] = 7 says that
    // a word is complete and phase[4:3] + 1 (mod 4) is its lane: one 4:1 multiplexer per bit
    // picks the word (instead of an AND-OR over the lanes' done flags).
    wire [ACC_BITS-1:0] word [0:LANES-1];
    genvar l;
    generate
        for (l = 0; l < LANES; l = l + 1) begin : lane
            reg [ACC_BITS-2:0] bits;
            always @(posedge clk) bits <= {serial_in[l], bits[ACC_BITS-2:1]};
            assign word[l] = {serial_in[l], bits};
        end
    endgenerate
    wire       complete = (phase[2:0] == 3'd7);
    wire [1:0] lane_done = phase[4:3] + 2'd1;

    always @(posedge clk) begin
        valid <= complete;
        if (complete) raw <= word[lane_done] + init;
    end

    // clip(acc >>> SHIFT, 0, 255): negative -> 0; anything at or above 256 << SHIFT -> 255
    wire negative = raw[ACC_BITS-1];
    wire saturate = |raw[ACC_BITS-2:SHIFT+8];
    wire [7:0] quant = negative ? 8'd0 : saturate ? 8'd255 : raw[SHIFT+7:SHIFT];
    assign result = (mode == MODE_BINARY) ? {7'd0, ~negative} : quant;
endmodule
`default_nettype wire
