`default_nettype none
// Channel shift in the data-buffer address generator.
//
// Every data-buffer bank (= channel) is read at its own address: the current pixel moved by
// the bank's shift direction d (0..8, source offset (d/3 - 1, d%3 - 1); 9..15 read as the
// identity 4). The nine candidate addresses and their in-frame flags are held in registers
// shared by all banks; each bank only selects one. Where the source pixel lies outside the
// H x W frame the bank's `fill` flag is set and the feeder substitutes the fill value (zero
// fill for SAC).
//
// Timing: the candidates are counters, not sums. `start` loads pixel 0's (base, base +- width,
// each +- 1, from the MATMUL's fields) and `step` moves every candidate to the next pixel (+1)
// and updates the four edge flags from the pixel's position, so no adder sits between these
// registers and the banks' address selects, whose wires span every bank of the die; only the
// host's 2:1 select below does, one LUT level in front of every bank's select (`host` is a
// register of the top's, so that level does not add a LUT of its own in front).
//
// While `host` is high every candidate is `host_addr`, so every bank addresses the host's
// entry whatever its direction: the host's reads take the banks' own selects, and the
// host-or-run choice is one 2:1 multiplexer per candidate bit (9 x AW) instead of one per
// bank and address bit (BANKS x AW: 5,120 at 512 banks, about 4,600 LUTs measured). The
// host's address is a combinational input here, as it was at the banks' own multiplexers;
// the timing flow, with it on pins, does not time that path.
module channel_shift #(
    parameter BANKS = 64,
    parameter AW = 10,          // data-buffer entry address width
    parameter DW = 12           // width of the pixel position, height and width
) (
    input  wire                 clk,
    input  wire                 start,      // load pixel 0 of the frame below
    input  wire [AW-1:0]        base,       // (start) the entry of pixel 0
    input  wire [DW-1:0]        height,     // (start) the frame's height and width
    input  wire [DW-1:0]        width,
    input  wire                 step,       // move to the next pixel (row-major)
    input  wire [BANKS*4-1:0]   dir,
    input  wire                 host,       // every bank's address is host_addr (the host reads)
    input  wire [AW-1:0]        host_addr,
    output wire [BANKS*AW-1:0]  addr,       // of the current pixel (pixel 0 from the cycle after
                                            // start), or host_addr
    output wire [BANKS-1:0]     fill
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(BANKS >= 1 && AW >= 1 && DW >= 2)) begin : check_banks_aw_dw
            BANKS_AW_DW_must_be_positive parameter_check_failed();
        end
    endgenerate

    // the frame and the pixel's position in it, for the edge flags
    reg [DW-1:0] h_q, w_q, y, x;
    reg up_ok, down_ok, left_ok, right_ok;      // the neighbour in that direction is in the frame
    // x is the row's last pixel (x + 1 == w_q), kept as a register beside x (timing closure: the
    // compare's carry chain had been in front of every flag's enable): set for x + 1 when x
    // moves on, for 0 when a row ends
    reg row_end;
    localparam [DW-1:0] ONE = 1;
    wire [DW:0] y2 = {1'b0, y} + {{(DW-1){1'b0}}, 2'd2};
    wire [DW:0] x2 = {1'b0, x} + {{(DW-1){1'b0}}, 2'd2};
    always @(posedge clk) begin
        if (start) begin
            h_q <= height;
            w_q <= width;
            y <= {DW{1'b0}};
            x <= {DW{1'b0}};
            row_end <= (width == ONE);
            up_ok <= 1'b0;
            left_ok <= 1'b0;
            down_ok <= (height > ONE);
            right_ok <= (width > ONE);
        end else if (step) begin
            if (row_end) begin
                x <= {DW{1'b0}};
                y <= y + 1'b1;
                row_end <= (w_q == ONE);
                left_ok <= 1'b0;
                right_ok <= (w_q > ONE);
                up_ok <= 1'b1;
                down_ok <= (y2 < {1'b0, h_q});
            end else begin
                x <= x + 1'b1;
                row_end <= (x2 == {1'b0, w_q});
                left_ok <= 1'b1;
                right_ok <= (x2 < {1'b0, w_q});
            end
        end
    end

    wire [AW-1:0] row_step = width[AW-1:0];
    wire [AW-1:0] cand [0:8];
    wire [8:0] in_frame;
    genvar d, b;
    generate
        for (d = 0; d < 9; d = d + 1) begin : direction
            localparam integer DY = d / 3 - 1;
            localparam integer DX = d % 3 - 1;
            wire [AW-1:0] vert0 = (DY < 0) ? base - row_step : (DY > 0) ? base + row_step : base;
            wire [AW-1:0] init = (DX < 0) ? vert0 - 1'b1 : (DX > 0) ? vert0 + 1'b1 : vert0;
            reg  [AW-1:0] at;
            always @(posedge clk) begin
                if (start)
                    at <= init;
                else if (step)
                    at <= at + 1'b1;
            end
            assign cand[d] = host ? host_addr : at;
            assign in_frame[d] = ((DY < 0) ? up_ok : (DY > 0) ? down_ok : 1'b1)
                               & ((DX < 0) ? left_ok : (DX > 0) ? right_ok : 1'b1);
        end
        // Each bank's select is a case over the 4-bit direction, codes 9..15 its default, the
        // identity. Written as an index into 16 entries (9..15 wired to the identity's), yosys'
        // Xilinx mapping turned it into MUXF7/MUXF8 trees once the candidates were the host
        // select's outputs, not registers: 19 % more LUTs at 64 banks than this case.
        for (b = 0; b < BANKS; b = b + 1) begin : bank
            wire [3:0] d_sel = dir[b*4 +: 4];
            reg [AW-1:0] a_sel;
            reg          f_sel;
            always @* begin
                case (d_sel)
                    4'd0: begin a_sel = cand[0]; f_sel = in_frame[0]; end
                    4'd1: begin a_sel = cand[1]; f_sel = in_frame[1]; end
                    4'd2: begin a_sel = cand[2]; f_sel = in_frame[2]; end
                    4'd3: begin a_sel = cand[3]; f_sel = in_frame[3]; end
                    4'd5: begin a_sel = cand[5]; f_sel = in_frame[5]; end
                    4'd6: begin a_sel = cand[6]; f_sel = in_frame[6]; end
                    4'd7: begin a_sel = cand[7]; f_sel = in_frame[7]; end
                    4'd8: begin a_sel = cand[8]; f_sel = in_frame[8]; end
                    default: begin a_sel = cand[4]; f_sel = in_frame[4]; end    // 4 and 9..15
                endcase
            end
            assign addr[b*AW +: AW] = a_sel;
            assign fill[b] = ~f_sel;
        end
    endgenerate
endmodule
`default_nettype wire
