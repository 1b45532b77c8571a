`default_nettype none
// Data feeder: from the data-buffer banks to the array's column inputs.
//
// Column c, slot j reads bank in_ch + c*G + j when j < G and c < tile_cols, and nothing (zeros)
// otherwise (latched by `setup` before a MATMUL executes). Every 8 cycles (`load`) the byte read for the
// next pixel (or the fill value where the channel shift left the frame, or 0 when `load_valid`
// is low, i.e. past the last pixel) goes out LSB first, one bit per cycle.
//
// The serializers sit on the bank side: each bank turns its byte into bits (and latches its
// fill flag; one shared serializer holds the fill value), and the crossbar moves single bits.
// A logarithmic shifter moves bank in_ch + i's bit to position i (tile channel i, log2(BANKS)
// stages of 2:1 multiplexers shared by all slots), then slot (c, j) picks tile channel c*G + j
// among the 8 group sizes. Moving bits instead of bytes makes the crossbar 8 times smaller: at
// the paper's 512 banks it was most of the feeder (docs/microarchitecture.md). The flip-flops
// stay about the same: one 8-bit serializer per bank instead of one per slot.
//
// Two register stages keep the block RAMs' clock-to-out and the crossbar apart (timing closure,
// docs/microarchitecture.md): the serializers latch the whole byte at `load`, so bit 0 leaves
// from a flip-flop in the cycle after it, and the shifter's outputs are registered before the
// slots' group multiplexers. Bit b of the byte loaded in cycle t is on `col_data_next` in cycle
// t + 2 + b (fpga/cycle_model.py FEEDER_REGISTERS); the array registers it as the first stage of
// its column chains (systolic_array.v). `clear` zeroes every stage but the serializers' bytes
// (which shift out unused until the next load), and so the output from the next cycle on: the
// output is a function of registers only (timing closure: `clear` is the top's `!exec_mm`, and
// gating the output with it had put the decoder's register, 2.4 ns of route away, in front of
// the first cells). The top raises `clear` only after a MATMUL's last byte is out (every
// MATMUL executes 20 or more cycles past its last pixel's bit 7), so no bit is cut short there.
module data_feeder #(
    parameter COLS = 8,
    parameter SLOTS = 8,
    parameter BANKS = 64,
    parameter BKW = 6                   // bank index width, >= clog2(BANKS)
) (
    input  wire                     clk,
    input  wire                     clear,      // no MATMUL: the outputs zero from the next
                                                // cycle on (the bank serializers shift out unused)
    input  wire                     setup,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [11:0]              in_ch,      // < BANKS (the decoder checks the window)
    /* verilator lint_on UNUSEDSIGNAL */
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

    localparam NS = COLS * SLOTS;                   // slots = tile channels at most
    localparam NE = (BANKS > NS) ? BANKS : NS;      // positions of the shifter
    localparam NR = (NE < COLS * 8) ? NE : COLS * 8; // positions a slot can take (c*G + j)

    reg [BKW-1:0] base;                             // in_ch: the tile's first bank
    reg [2:0]     g_sel;                            // G - 1
    /* verilator lint_off UNUSEDSIGNAL */
    wire [3:0]    g_minus_1 = group - 4'd1;
    /* verilator lint_on UNUSEDSIGNAL */
    always @(posedge clk) begin
        if (setup) begin
            base <= in_ch[BKW-1:0];                 // < BANKS: the decoder checks the window
            g_sel <= g_minus_1[2:0];
        end
    end

    // Bank side. Bit b of every byte goes out b + 1 cycles after `load`; `valid_l` says whether
    // the byte in flight is a pixel's (load_valid latched at the load).
    reg  [7:0] fill_sr;                             // the fill value, shifted out LSB first
    reg        valid_l;
    always @(posedge clk) begin
        if (clear) begin
            fill_sr <= 8'd0;
            valid_l <= 1'b0;
        end else if (load) begin
            fill_sr <= fill_value;
            valid_l <= load_valid;
        end else begin
            fill_sr <= {1'b0, fill_sr[7:1]};
        end
    end
    wire fill_bit = fill_sr[0];

    // whether the bit on the shifter's register is a pixel's
    reg live_q;
    always @(posedge clk) live_q <= !clear && valid_l;

    // shifter: stage t+1 position i = stage t position i (+ 2^t if base[t]); stage 0 holds
    // the banks' bits (or the fill value's); stage BKW position i = bank base + i's bit. One
    // net per position (an array, not one wide vector, which simulators re-evaluate as a whole).
    wire stage [0:(BKW+1)*NE-1];
    wire shifted [0:NR-1];                          // the last stage, registered
    genvar c, j, t, i;
    generate
        for (i = 0; i < NE; i = i + 1) begin : bank_bit
            if (i < BANKS) begin : bank
                reg [7:0] sr;                       // the bank's byte, shifted out LSB first
                reg       fill_l;                   // the byte is the fill value
                always @(posedge clk) begin
                    if (load)
                        sr <= bank_q[i*8 +: 8];
                    else
                        sr <= {1'b0, sr[7:1]};
                    if (clear)
                        fill_l <= 1'b0;
                    else if (load)
                        fill_l <= bank_fill[i];
                end
                assign stage[i] = fill_l ? fill_bit : sr[0];
            end else begin : none
                assign stage[i] = 1'b0;
            end
        end
        for (t = 0; t < BKW; t = t + 1) begin : shift
            for (i = 0; i < NE; i = i + 1) begin : pos
                if (i + (1 << t) < NE) begin : from
                    assign stage[(t+1)*NE + i] = base[t] ? stage[t*NE + i + (1 << t)] : stage[t*NE + i];
                end else begin : past_end
                    assign stage[(t+1)*NE + i] = base[t] ? 1'b0 : stage[t*NE + i];
                end
            end
        end

        // the shifter's outputs, registered (only the positions a slot can take)
        for (i = 0; i < NR; i = i + 1) begin : shifted_reg
            reg q;
            always @(posedge clk) q <= !clear && stage[BKW*NE + i];
            assign shifted[i] = q;
        end

        for (c = 0; c < COLS; c = c + 1) begin : col
            for (j = 0; j < SLOTS; j = j + 1) begin : slot
                localparam [7:0] C8 = c;
                localparam [3:0] J4 = j;
                reg used;
                always @(posedge clk) if (setup) used <= (J4 < group) && (C8 < tile_cols);
                // tile channel c*G + j for G = 1..8 (slots with j >= G are unused)
                // Toggle coverage off: by_group is wiring. Its entries for G <= j (and past the
                // last position) are the constant 0 of the `unused` branch, which cannot
                // toggle; the others are copies of the shifter's outputs, and the entry the
                // group selects is counted in col_data_next.
                /* verilator coverage_off */
                wire [7:0] by_group;
                /* verilator coverage_on */
                genvar g;
                for (g = 1; g <= 8; g = g + 1) begin : group_size
                    if (j < g && c * g + j < NR) begin : channel
                        assign by_group[g-1] = shifted[c*g + j];
                    end else begin : unused
                        assign by_group[g-1] = 1'b0;
                    end
                end
                assign col_data_next[c*SLOTS + j] = used && live_q && by_group[g_sel];
            end
        end
    endgenerate
endmodule
`default_nettype wire
