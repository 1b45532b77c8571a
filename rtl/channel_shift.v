`default_nettype none
// Channel shift in the data-buffer address generator.
//
// Every data-buffer bank (= channel) is read at its own address: the current pixel moved by
// the bank's shift direction d (0..8, source offset (d/3 - 1, d%3 - 1); 9..15 read as the
// identity 4). The nine candidate addresses and their in-frame flags are computed once and
// shared; each bank only selects one. Where the source pixel lies outside the H x W frame the
// bank's `fill` flag is set and the feeder substitutes the fill value (zero fill for SAC).
module channel_shift #(
    parameter BANKS = 64,
    parameter AW = 10,          // data-buffer entry address width
    parameter DW = 12           // width of y, x, height, width
) (
    input  wire [AW-1:0]        base,       // entry of the current pixel
    input  wire [DW-1:0]        y,
    input  wire [DW-1:0]        x,
    input  wire [DW-1:0]        height,
    input  wire [DW-1:0]        width,
    input  wire [BANKS*4-1:0]   dir,
    output wire [BANKS*AW-1:0]  addr,
    output wire [BANKS-1:0]     fill
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(BANKS >= 1 && AW >= 1 && DW >= 2)) begin : check_banks_aw_dw
            BANKS_AW_DW_must_be_positive parameter_check_failed();
        end
    endgenerate

    wire [AW-1:0] row_step = width[AW-1:0];
    wire [8:0] in_frame;
    wire [AW-1:0] cand [0:8];

    // rows: y-1 exists when y > 0, y+1 when y+1 < H; columns likewise
    wire up_ok = (y != {DW{1'b0}});
    wire down_ok = (y + 1'b1 < height);
    wire left_ok = (x != {DW{1'b0}});
    wire right_ok = (x + 1'b1 < width);

    genvar d, b;
    generate
        for (d = 0; d < 9; d = d + 1) begin : direction
            localparam integer DY = d / 3 - 1;
            localparam integer DX = d % 3 - 1;
            wire [AW-1:0] vert = (DY < 0) ? base - row_step : (DY > 0) ? base + row_step : base;
            assign cand[d] = (DX < 0) ? vert - 1'b1 : (DX > 0) ? vert + 1'b1 : vert;
            assign in_frame[d] = ((DY < 0) ? up_ok : (DY > 0) ? down_ok : 1'b1)
                               & ((DX < 0) ? left_ok : (DX > 0) ? right_ok : 1'b1);
        end
        for (b = 0; b < BANKS; b = b + 1) begin : bank
            wire [3:0] raw_dir = dir[b*4 +: 4];
            wire [3:0] d_sel = (raw_dir > 4'd8) ? 4'd4 : raw_dir;
            assign addr[b*AW +: AW] = cand[d_sel];
            assign fill[b] = ~in_frame[d_sel];
        end
    endgenerate
endmodule
`default_nettype wire
