// The instruction checks of the ISA and the cycle model, written from docs/isa.md ("Words",
// "Checks and error codes", "Cycle model") and fpga/isa.py (`decode`, `check`), not from
// rtl/instruction_decoder.v. Combinational, one word: the error code the decoder must report
// for it given the loaded tile, and the cycles a legal word takes.
//
//   opcode [3:0]: 1 LOAD_WEIGHTS, 2 MATMUL, 15 HALT, anything else ILLEGAL_OPCODE (1).
//   RESERVED_BITS (2): a bit outside the opcode's fields (LOAD_WEIGHTS: 7:4 and 127:96;
//     MATMUL: 11; HALT: 127:4), or an unused MATMUL field not 0: fill without shift_en,
//     acc_addr without acc_in, out_ch in modes 2 and 3.
//   LOAD_WEIGHTS: BAD_TILE (3) rows not in 1..ROWS or cols not in 1..COLS; WEIGHT_RANGE (4)
//     w_addr + rows > WDEPTH, b_addr + rows > BDEPTH or s_addr >= SDEPTH.
//   MATMUL (P = H * W, slots = tile_cols * G): NO_WEIGHTS (5) no tile loaded; BAD_SHAPE (6)
//     H or W 0 or P > DDEPTH; DBUF_RANGE (7) in_addr + P > DDEPTH or in_ch + slots > CMAX;
//     PBUF_RANGE (8) acc_in and acc_addr + P > PDEPTH; modes 0/1: DBUF_RANGE out_addr + P >
//     DDEPTH or out_ch + tile_rows > CMAX, then OVERLAP (9) the output banks and entries both
//     intersect the input ones; modes 2/3 (n = P, or 1 in mode 3): PBUF_RANGE out_addr + n >
//     PDEPTH, then OVERLAP acc_in, out_addr != acc_addr and the n outputs intersect the P
//     partial sums read.
//   The first failing check in this order is the code. PC_OVERFLOW (10) is about the program
//   counter, not the word: the wrapper reports it.
//   Cycles (fetch to the next fetch): LOAD_WEIGHTS 2 + rows + 1; MATMUL 2 + 8P + 24 + COLS +
//   tile_rows + 4 (+1 in mode 3); HALT 2.
`default_nettype none
module isa_check_spec #(
    // the array and memory sizes the words are checked against (fpga.arch.ArrayConfig)
    parameter ROWS = 8,
    parameter COLS = 8,
    parameter CMAX = 64,
    parameter DDEPTH = 1024,
    parameter PDEPTH = 1024,
    parameter WDEPTH = 512,
    parameter BDEPTH = 512,
    parameter SDEPTH = 64
) (
    input  wire [127:0] word,
    input  wire [7:0]   tile_rows,      // the tile loaded since the start (0: none)
    input  wire [7:0]   tile_cols,
    output reg  [3:0]   code,           // 0: legal
    output wire [31:0]  cycles          // of a legal word
);
    wire [3:0] op = word[3:0];
    wire is_lw = op == 4'd1, is_mm = op == 4'd2, is_halt = op == 4'd15;

    // LOAD_WEIGHTS fields, widened to 32 bits (no sum below can wrap)
    wire [31:0] rows = word[15:8], cols = word[23:16];
    wire [31:0] w_addr = word[47:24], b_addr = word[71:48], s_addr = word[95:72];
    // MATMUL fields
    wire [1:0]  mode = word[5:4];
    wire        acc_in = word[6], shift_en = word[7];
    wire [31:0] g = word[10:8] + 32'd1;
    wire [7:0]  fill = word[19:12];
    wire [31:0] h = word[31:20], w = word[43:32];
    wire [31:0] in_addr = word[63:44], out_addr = word[83:64];
    wire [31:0] in_ch = word[95:84], out_ch = word[107:96], acc_addr = word[127:108];
    wire [31:0] p = h * w;                              // < 2^24
    wire [31:0] slots = tile_cols * g;
    wire [31:0] t_rows = tile_rows;
    wire [31:0] n_out = (mode == 2'd3) ? 32'd1 : p;

    wire reserved = is_lw ? (word[7:4] != 4'd0 || word[127:96] != 32'd0)
                  : is_mm ? (word[11] || (!shift_en && fill != 8'd0) || (!acc_in && acc_addr != 32'd0)
                             || (mode[1] && out_ch != 32'd0))
                  : (word[127:4] != 124'd0);

    function clash;                                     // [a0, a0 + an) meets [b0, b0 + bn)
        input [31:0] a0, an, b0, bn;
        clash = a0 < b0 + bn && b0 < a0 + an;
    endfunction

    always @(*) begin
        code = 4'd0;
        if (!is_lw && !is_mm && !is_halt) code = 4'd1;
        else if (reserved) code = 4'd2;
        else if (is_lw) begin
            if (rows < 1 || rows > ROWS || cols < 1 || cols > COLS) code = 4'd3;
            else if (w_addr + rows > WDEPTH || b_addr + rows > BDEPTH || s_addr >= SDEPTH) code = 4'd4;
        end else if (is_mm) begin
            if (tile_rows == 8'd0) code = 4'd5;
            else if (h == 0 || w == 0 || p > DDEPTH) code = 4'd6;
            else if (in_addr + p > DDEPTH || in_ch + slots > CMAX) code = 4'd7;
            else if (acc_in && acc_addr + p > PDEPTH) code = 4'd8;
            else if (!mode[1]) begin
                if (out_addr + p > DDEPTH || out_ch + t_rows > CMAX) code = 4'd7;
                else if (clash(in_ch, slots, out_ch, t_rows) && clash(in_addr, p, out_addr, p)) code = 4'd9;
            end else begin
                if (out_addr + n_out > PDEPTH) code = 4'd8;
                else if (acc_in && out_addr != acc_addr && clash(acc_addr, p, out_addr, n_out)) code = 4'd9;
            end
        end
    end

    assign cycles = is_lw ? 32'd2 + rows + 32'd1
                  : is_mm ? 32'd2 + 32'd8 * p + 32'd24 + COLS + t_rows + 32'd4 + (mode == 2'd3)
                  : 32'd2;
endmodule
`default_nettype wire
