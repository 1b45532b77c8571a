`default_nettype none
// Synchronous first-in first-out buffer with a combinational head (first-word fall-through):
// the AXI top keeps the host port's read results here until its AXI4-Stream output takes them.
// `count` lets the writer reserve room before it asks for data that arrives later (the host
// port answers reads two cycles after the request). Pushing while full or popping while empty
// is ignored; the AXI top never does either.
module stream_fifo #(
    parameter WIDTH = 33,
    parameter DEPTH = 4,                 // entries, a power of two
    parameter AW = 2                     // log2(DEPTH): `count` has AW + 1 bits
) (
    input  wire             clk,
    input  wire             rst,
    input  wire             push,
    input  wire [WIDTH-1:0] push_data,
    input  wire             pop,
    output wire [WIDTH-1:0] head,
    output wire             empty,
    output wire [AW:0]      count
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(WIDTH >= 1)) begin : check_width
            WIDTH_must_be_positive parameter_check_failed();
        end
        if (!(DEPTH >= 2 && DEPTH <= 65536 && (DEPTH & (DEPTH - 1)) == 0)) begin : check_depth
            DEPTH_must_be_a_power_of_2_from_2_to_65536 parameter_check_failed();
        end
        if (!((1 << AW) == DEPTH)) begin : check_aw
            AW_must_be_log2_DEPTH parameter_check_failed();
        end
    endgenerate

    reg [WIDTH-1:0] mem [0:DEPTH-1];
    reg [AW:0]      n;                   // entries held
    reg [AW-1:0]    rd, wr;
    wire do_push = push && (n != DEPTH[AW:0]);
    wire do_pop = pop && (n != {(AW+1){1'b0}});
    always @(posedge clk) begin
        if (rst) begin
            n <= {(AW+1){1'b0}};
            rd <= {AW{1'b0}};
            wr <= {AW{1'b0}};
        end else begin
            if (do_push) begin
                mem[wr] <= push_data;
                wr <= wr + 1'b1;
            end
            if (do_pop) rd <= rd + 1'b1;
            if (do_push && !do_pop) n <= n + 1'b1;
            else if (do_pop && !do_push) n <= n - 1'b1;
        end
    end
    assign head = mem[rd];
    assign empty = (n == {(AW+1){1'b0}});
    assign count = n;
endmodule
`default_nettype wire
