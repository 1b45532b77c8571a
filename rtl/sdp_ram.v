`default_nettype none
// Simple dual-port RAM: one write port, one registered read port (one cycle of latency), the
// shape FPGA block and distributed RAMs have. Every buffer of the accelerator is built from it.
//
// A read of the address being written in the same cycle returns the old word when
// READ_OLD_ON_COLLISION is 1. Block RAMs with separate read and write ports do not guarantee
// that, so synthesis adds logic to emulate it (yosys: a registered address compare, the write
// data and a multiplexer on the read data, for every RAM). With 0 such a read returns x: the
// caller promises that it never uses the data of a read that collides with a write, synthesis
// drops the emulation, and a simulation that does use it sees x (Icarus) or a wrong word.
module sdp_ram #(
    parameter WIDTH = 8,
    parameter DEPTH = 256,
    parameter AW = 8,                   // address width, >= clog2(DEPTH)
    parameter READ_OLD_ON_COLLISION = 1
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
        if (!(READ_OLD_ON_COLLISION == 0 || READ_OLD_ON_COLLISION == 1)) begin : check_collision
            READ_OLD_ON_COLLISION_must_be_0_or_1 parameter_check_failed();
        end
    endgenerate

    localparam [31:0] LIMIT = DEPTH;
    reg [WIDTH-1:0] mem [0:DEPTH-1];

    // out-of-range addresses are never produced: the decoder checks every instruction's
    // ranges and the host port masks its offsets; the guards keep simulation defined anyway
    always @(posedge clk) begin
        if (we && {{(32-AW){1'b0}}, waddr} < LIMIT) mem[waddr] <= wdata;
        if (READ_OLD_ON_COLLISION == 0 && we && waddr == raddr) rdata <= {WIDTH{1'bx}};
        else rdata <= ({{(32-AW){1'b0}}, raddr} < LIMIT) ? mem[raddr] : {WIDTH{1'b0}};
    end
endmodule
`default_nettype wire
