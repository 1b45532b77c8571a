`default_nettype none
// Data feeder: from the data-buffer banks to the array's column inputs.
//
// At MATMUL start (`setup`) it latches which bank feeds each channel slot: column c, slot j
// reads bank in_ch + c*G + j when j < G and c < tile_cols, and nothing (zeros) otherwise. Every
// 8 cycles (`load`) each slot's serializer takes the byte read for the next pixel (or the fill
// value where the channel shift left the frame, or 0 when `load_valid` is low, i.e. past the
// last pixel) and then shifts it out LSB first.
//
// `col_data_next` runs one cycle ahead of a registered serializer output: bit 0 of the byte
// appears in the cycle of `load` itself, bits 1..7 in the 7 cycles after it. The array
// registers it as the first stage of its column chains (systolic_array.v).
module data_feeder #(
    parameter COLS = 8,
    parameter SLOTS = 8,
    parameter BANKS = 64,
    parameter BKW = 6                   // bank index width, >= clog2(BANKS)
) (
    input  wire                     clk,
    input  wire                     clear,      // hold the serializers at zero (no MATMUL)
    input  wire                     setup,
    input  wire [11:0]              in_ch,
    input  wire [3:0]               group,      // G = 1..8
    input  wire [7:0]               tile_cols,
    input  wire [BANKS*8-1:0]       bank_q,
    input  wire [BANKS-1:0]         bank_fill,
    input  wire [7:0]               fill_value,
    input  wire                     load,
    input  wire                     load_valid,
    output wire [COLS*SLOTS-1:0]    col_data_next
);
    // Parameter checks at elaboration: a violated constraint instantiates a module that
    // does not exist, whose name says what is wrong (Verilog-2005 has no $error).
    generate
        if (!(COLS >= 1 && BANKS >= 1)) begin : check_cols_and_banks
            COLS_and_BANKS_must_be_positive parameter_check_failed();
        end
        if (!(SLOTS >= 1 && SLOTS <= 8)) begin : check_slots
            SLOTS_must_be_1_to_8 parameter_check_failed();
        end
        if (!((1 << BKW) >= BANKS)) begin : check_bkw
            BKW_must_be_at_least_clog2_BANKS parameter_check_failed();
        end
    endgenerate

    genvar c, j;
    generate
        for (c = 0; c < COLS; c = c + 1) begin : col
            for (j = 0; j < SLOTS; j = j + 1) begin : slot
                localparam [7:0] C8 = c;
                localparam [3:0] J4 = j;
                reg [BKW-1:0] src;
                reg           used;
                // < BANKS whenever `used`: the decoder checks in_ch + tile_cols*G <= CMAX
                /* verilator lint_off UNUSEDSIGNAL */
                wire [15:0] bank_index = {4'd0, in_ch} + {8'd0, C8} * {12'd0, group} + {12'd0, J4};
                /* verilator lint_on UNUSEDSIGNAL */
                always @(posedge clk) begin
                    if (setup) begin
                        src <= bank_index[BKW-1:0];
                        used <= (J4 < group) && (C8 < tile_cols);
                    end
                end
                wire [7:0] value = bank_fill[src] ? fill_value : bank_q[src*8 +: 8];
                wire [7:0] next = (used && load_valid) ? value : 8'd0;
                reg  [6:0] rest;            // bits 1..7 of the byte, shifted out after bit 0
                always @(posedge clk) begin
                    if (clear) rest <= 7'd0;
                    else if (load) rest <= next[7:1];
                    else rest <= {1'b0, rest[6:1]};
                end
                assign col_data_next[c*SLOTS + j] = clear ? 1'b0 : load ? next[0] : rest[0];
            end
        end
    endgenerate
endmodule
`default_nettype wire
