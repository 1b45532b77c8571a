`default_nettype none
// Simple dual-port RAM: one write port, one registered read port (one cycle of latency), the
// shape FPGA block and distributed RAMs have. Every buffer of the accelerator is built from it.
module sdp_ram #(
    parameter WIDTH = 8,
    parameter DEPTH = 256,
    parameter AW = 8                    // address width, >= clog2(DEPTH)
) (
    input  wire             clk,
    input  wire             we,
    input  wire [AW-1:0]    waddr,
    input  wire [WIDTH-1:0] wdata,
    input  wire [AW-1:0]    raddr,
    output reg  [WIDTH-1:0] rdata
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(WIDTH >= 1 && DEPTH >= 1)) begin : check_width_and_depth
            WIDTH_and_DEPTH_must_be_positive parameter_check_failed();
        end
        if (!((1 << AW) >= DEPTH)) begin : check_aw
            AW_must_be_at_least_clog2_DEPTH parameter_check_failed();
        end
    endgenerate

    localparam [31:0] LIMIT = DEPTH;
    reg [WIDTH-1:0] mem [0:DEPTH-1];

    // out-of-range addresses are never produced: the decoder checks every instruction's
    // ranges and the host port masks its offsets; the guards keep simulation defined anyway
    always @(posedge clk) begin
        if (we && {{(32-AW){1'b0}}, waddr} < LIMIT) mem[waddr] <= wdata;
        rdata <= ({{(32-AW){1'b0}}, raddr} < LIMIT) ? mem[raddr] : {WIDTH{1'b0}};
    end
endmodule
`default_nettype wire
