// Formal properties of rtl/popcount_pipe.v (read with yosys `read_verilog -formal -sv`; the RTL
// is read as plain Verilog-2005 and never edited). Jobs: formal/jobs.toml.
//
// What is proven, for every sequence of input vectors and from any initial state of the tree's
// registers (the module has no reset: its registers start arbitrary): from cycle LATENCY on,
// `count` equals the population count of the `bits` presented LATENCY cycles earlier. The
// module documents LATENCY = 1 (the leaves) + its levels of 4-input nodes down to one root;
// the job gives the number that rule yields, so a tree one level deeper or shallower, or a
// wrong sum anywhere, fails. The reference count is a plain loop over the bits, here.
// Covers: the count is seen at 0, at N (all ones) and at some value in between.
`default_nettype none
module popcount_pipe_props #(
    parameter N = 4,            // input bits
    parameter W = 3,            // output width, >= clog2(N + 1)
    parameter LATENCY = 2       // the documented latency for N (1 + levels of 4-input nodes)
) (
    input wire         clk,
    input wire [N-1:0] bits
);
    wire [W-1:0] count;
    popcount_pipe #(.N(N), .W(W), .MAX_LATENCY(20)) dut (.clk(clk), .bits(bits), .count(count));

    function [W-1:0] ones;      // the reference: a plain sum of the bits
        input [N-1:0] v;
        integer i;
        begin
            ones = {W{1'b0}};
            for (i = 0; i < N; i = i + 1) ones = ones + v[i];
        end
    endfunction

    // the reference counts, delayed LATENCY cycles; `age` says how many are real
    reg [W-1:0] want [0:LATENCY-1];
    reg [7:0]   age = 8'd0;
    integer k;
    always @(posedge clk) begin
        want[0] <= ones(bits);
        for (k = 1; k < LATENCY; k = k + 1) want[k] <= want[k-1];
        if (age < LATENCY) age <= age + 8'd1;
    end

    always @(*) if (age >= LATENCY) assert(count == want[LATENCY-1]);

    always @(*) if (age >= LATENCY) begin
        cover(count == 0);
        cover(count == N);
        cover(count == N / 2 + 1 && N > 2);
    end
endmodule
`default_nettype wire
