`default_nettype none
// Pipelined population count: how many of N bits were 1, LATENCY cycles ago.
//
// The array's activity count: one bit per cell, summed every cycle. A combinational sum over
// thousands of cells is a deep adder tree in the middle of the datapath; this one is a tree of
// registered nodes instead. Leaves add 3 bits (a full adder: one 6-input LUT per output bit,
// which also absorbs the cells' own `active` gates), inner nodes add 4 children; every node is
// registered, so the longest path is one small adder. LATENCY = 1 + the number of inner levels
// (4 for 64 bits, 5 for 256, 7 for 8,192; make formal proves it at 4, 13 and 64 bits) and
// must stay within MAX_LATENCY.
module popcount_pipe #(
    parameter N = 64,               // input bits
    parameter W = 7,                // output width, >= clog2(N+1)
    parameter MAX_LATENCY = 20      // what the user of the count tolerates
) (
    input  wire         clk,
    input  wire [N-1:0] bits,
    output wire [W-1:0] count
);
    // node counts, widths and first node of the levels (level 0 = leaves)
    // Coverage off: these constant functions run only at elaboration (localparams, generate
    // bounds); Verilator still counts their statements as line points that never run.
    /* verilator coverage_off */
    function integer clog2_plus1;       // bits to hold the value n
        input integer n;
        integer v;
        begin
            clog2_plus1 = 0;
            for (v = n; v > 0; v = v / 2) clog2_plus1 = clog2_plus1 + 1;
        end
    endfunction
    function integer nodes;
        input integer level;
        integer i;
        begin
            nodes = (N + 2) / 3;
            for (i = 0; i < level; i = i + 1) nodes = (nodes + 3) / 4;
        end
    endfunction
    function integer width;             // a level-i node counts at most 3 * 4^i bits (and N)
        input integer level;
        begin
            width = (2 + 2 * level < clog2_plus1(N)) ? 2 + 2 * level : clog2_plus1(N);
            if (width < 2) width = 2;
        end
    endfunction
    function integer levels;            // index of the root level
        input integer dummy;
        begin
            levels = 0;
            while (nodes(levels) > 1) levels = levels + 1;
            if (dummy < 0) levels = 0;
        end
    endfunction
    function integer first;             // index of a level's first node
        input integer level;
        integer i;
        begin
            first = 0;
            for (i = 0; i < level; i = i + 1) first = first + nodes(i);
        end
    endfunction
    /* verilator coverage_on */

    localparam ROOT = levels(0);
    localparam LATENCY = ROOT + 1;
    localparam RW = width(ROOT);
    localparam TOTAL = first(ROOT + 1);
    localparam LEAVES = nodes(0);

    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(N >= 1)) begin : check_n
            N_must_be_positive parameter_check_failed();
        end
        if (!(W >= clog2_plus1(N) && W >= RW)) begin : check_w
            W_must_be_at_least_clog2_N_plus_1 parameter_check_failed();
        end
        if (!(LATENCY <= MAX_LATENCY)) begin : check_latency
            LATENCY_exceeds_MAX_LATENCY parameter_check_failed();
        end
    endgenerate

    wire [3*LEAVES-1:0] padded;
    // Toggle coverage off for `tree`, `child` and `below`: they are wiring, not state. Their
    // live bits are copies of the nodes' `sum` registers (counted there), the others are the
    // constant zero-extension to the root's width (or 0 for absent children), which never
    // toggle by construction.
    /* verilator coverage_off */
    wire [RW-1:0]       tree [0:TOTAL-1];           // every node, zero-extended to the root's width
    /* verilator coverage_on */
    generate
        if (3 * LEAVES > N) begin : pad
            assign padded = {{(3 * LEAVES - N){1'b0}}, bits};
        end else begin : no_pad
            assign padded = bits;
        end
    endgenerate

    genvar i, j, k;
    generate
        for (j = 0; j < LEAVES; j = j + 1) begin : leaf
            wire [2:0] b = padded[3*j +: 3];
            reg  [1:0] sum;
            always @(posedge clk) sum <= {(b[0] & b[1]) | (b[0] & b[2]) | (b[1] & b[2]), ^b};
            if (RW > 2) begin : widen
                assign tree[j] = {{(RW - 2){1'b0}}, sum};
            end else begin : same
                assign tree[j] = sum;
            end
        end
        for (i = 1; i <= ROOT; i = i + 1) begin : level
            localparam WI = width(i);
            for (j = 0; j < nodes(i); j = j + 1) begin : node
                /* verilator coverage_off */
                wire [4*WI-1:0] child;          // wiring: see `tree`
                /* verilator coverage_on */
                for (k = 0; k < 4; k = k + 1) begin : take
                    if (4 * j + k < nodes(i - 1)) begin : present
                        /* verilator lint_off UNUSEDSIGNAL */
                        /* verilator coverage_off */
                        wire [RW-1:0] below = tree[first(i - 1) + 4*j + k];   // < 2^WI; wiring
                        /* verilator coverage_on */
                        /* verilator lint_on UNUSEDSIGNAL */
                        assign child[k*WI +: WI] = below[WI-1:0];
                    end else begin : absent
                        assign child[k*WI +: WI] = {WI{1'b0}};
                    end
                end
                reg [WI-1:0] sum;
                always @(posedge clk)
                    sum <= child[0 +: WI] + child[WI +: WI] + child[2*WI +: WI] + child[3*WI +: WI];
                if (RW > WI) begin : widen
                    assign tree[first(i) + j] = {{(RW - WI){1'b0}}, sum};
                end else begin : same
                    assign tree[first(i) + j] = sum;
                end
            end
        end
        if (W > RW) begin : widen
            assign count = {{(W - RW){1'b0}}, tree[first(ROOT)]};
        end else begin : exact
            assign count = tree[first(ROOT)];
        end
    endgenerate
endmodule
`default_nettype wire
