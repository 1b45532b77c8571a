`default_nettype none
// Output accumulator of one array row: sums the raw 32-bit results of all pixels of a
// MATMUL (average pooling folded into the final layer's weights), wrapping modulo 2^32 like the
// golden pixel_sum. `sum_valid` rises for one cycle after the last pixel's result.
module output_accumulator #(
    parameter ACC_BITS = 32
) (
    input  wire                 clk,
    input  wire                 in_valid,
    input  wire                 first,      // first pixel: start from zero
    input  wire                 last,       // last pixel: present the sum next cycle
    input  wire [ACC_BITS-1:0]  value,
    output reg                  sum_valid,
    output reg  [ACC_BITS-1:0]  sum
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(ACC_BITS >= 1)) begin : check_acc_bits
            ACC_BITS_must_be_positive parameter_check_failed();
        end
    endgenerate

    always @(posedge clk) begin
        sum_valid <= in_valid & last;
        if (in_valid) sum <= (first ? {ACC_BITS{1'b0}} : sum) + value;
    end
endmodule
`default_nettype wire
