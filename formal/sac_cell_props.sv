// Formal check of rtl/sac_cell.v against formal/sac_cell_spec.v (read with yosys
// `read_verilog -formal -sv`; the RTL is read as plain Verilog-2005 and never edited).
// Jobs: formal/jobs.toml.
//
// The wrapper plays the cell's column, row and diagonal as docs/microarchitecture.md
// ("Bit-serial arithmetic") describes them, for one bounded sequence:
//   cycle 0: the weight byte is loaded (w_load); w_in is free in every other cycle;
//   the diagonal's phase: lane 0 is at bit (t - START) mod 32 at cycle t, so `phase_next` is
//   that + 1 and `word_end[l]` marks the cycle at which lane l's word is at bit 31;
//   data: PIXELS uint8 words per slot, LSB first, pixel p's bit b at the base tap at cycle
//   START + 8p + b (zeros before and after, as the feeder and the chains are between
//   multiplications); `slots_next` shows them one cycle ahead;
//   partial sums: pixel p's int32 word on lane p mod 4, bit t at cycle START + 8p + t; the
//   lanes carry free bits outside these words;
//   results: word p, bit t on `psum_out` lane p mod 4 at cycle START + 8p + t + 1.
// Every weight byte (all 256), every data word of every slot, every partial sum and every
// initial value of the cell's uninitialized registers is free (anyconst / anyinit). At cycle END
// (one after the last result bit) every result word, collected from its lane, must be the
// spec's (init + w_int * x mod 2^32), and `active` must have pulsed once per pixel whose weight
// and datum are both nonzero (the activity count).
// PIXELS = 5 puts a word on every lane and a second one on lane 0 right after the first: the
// carry must be cleared between the words of a lane. A bounded check (BMC) to the cycle of the
// last result bit; it says nothing about longer sequences (see formal/README.md).
`default_nettype none
module sac_cell_props #(
    parameter SLOTS = 8,        // the cell's channel slots (column combining, 1..8)
    parameter TAPS = 7,         // the cell's exponent codes 1..TAPS (the spec knows codes 1..7)
    parameter PIXELS = 5,       // data words per slot (and partial sums) in the sequence
    parameter START = 8         // cycles of phase before the first word (the cell latches its
                                // data lane and clears its carries from the phase signals)
) (
    input wire       clk,
    input wire [7:0] w_noise,   // w_in while w_load is low: free
    input wire [3:0] psum_idle  // the lanes' bits outside the pixels' words: free
);
    localparam LANES = 4;
    localparam END = START + 8 * (PIXELS - 1) + 32 + 1;   // the cycle after the last result bit

    (* anyconst *) reg [7:0]            packed_w;
    (* anyconst *) reg [64*PIXELS-1:0]  data;             // pixel p, slot k: [64p + 8k +: 8]
    (* anyconst *) reg [32*PIXELS-1:0]  init;             // pixel p: [32p +: 32]

    reg [7:0] t = 8'd0;                                    // the cycle
    always @(posedge clk) if (t != 8'hff) t <= t + 8'd1;

    // ---- the specification, per pixel ----
    wire [32*PIXELS-1:0] want;
    wire [PIXELS-1:0]    pair;
    genvar p;
    generate
        for (p = 0; p < PIXELS; p = p + 1) begin : spec
            sac_cell_spec #(.SLOTS(SLOTS)) ref_p (
                .packed_w(packed_w), .slot_data(data[64*p +: 64]), .init(init[32*p +: 32]),
                .acc(want[32*p +: 32]), .pair(pair[p]));
        end
    endgenerate

    // ---- the column, the diagonal and the row, as the array drives them ----
    // Shift registers, loaded with the words at cycle 0 and shifted one bit per cycle during
    // their windows (indexing the words by the cycle instead makes every time step of the
    // unrolled check a wide multiplexer: far slower). Lane l carries pixels l, l + 4, ...
    // back to back, so its words form one stream.
    localparam DATA_FIRST = START - 1;                  // slots_next runs one cycle ahead
    wire [4:0] phase = t - START;                       // lane 0's bit index here (mod 32)
    wire [4:0] phase_next = phase + 5'd1;
    wire data_window = t >= DATA_FIRST && t < DATA_FIRST + 8 * PIXELS;
    wire [7:0]       slots_next;
    wire [LANES-1:0] word_end, psum_in, psum_out;
    genvar k, l, w;
    generate
        for (k = 0; k < 8; k = k + 1) begin : slot
            reg [8*PIXELS-1:0] stream;                  // the slot's words still to come
            integer q;
            always @(posedge clk)
                if (t == 8'd0) for (q = 0; q < PIXELS; q = q + 1) stream[8*q +: 8] <= data[64*q + 8*k +: 8];
                else if (data_window) stream <= stream >> 1;
            assign slots_next[k] = data_window & stream[0];
        end
        for (l = 0; l < LANES; l = l + 1) begin : lane
            localparam WORDS = (PIXELS - 1 - l) / LANES + 1;   // pixels l, l + 4, ...
            localparam FIRST = START + 8 * l;                  // its first word's bit 0
            localparam [4:0] OFFSET = 8 * l;                   // its bit index behind lane 0's
            wire in_window = t >= FIRST && t < FIRST + 32 * WORDS;
            wire out_window = t >= FIRST + 1 && t < FIRST + 1 + 32 * WORDS;
            reg [32*WORDS-1:0] words_in;                // the words still to enter
            reg [32*WORDS-1:0] words_out;               // the result bits seen
            integer j;
            always @(posedge clk) begin
                if (t == 8'd0) for (j = 0; j < WORDS; j = j + 1) words_in[32*j +: 32] <= init[32*(l + LANES*j) +: 32];
                else if (in_window) words_in <= words_in >> 1;
                if (out_window) words_out <= {psum_out[l], words_out[32*WORDS-1:1]};
            end
            assign psum_in[l] = in_window ? words_in[0] : psum_idle[l];
            assign word_end[l] = phase - OFFSET == 5'd31;   // at bit 31 now
            for (w = 0; w < WORDS; w = w + 1) begin : word
                always @(*) if (t == END) assert(words_out[32*w +: 32] == want[32*(l + LANES*w) +: 32]);
            end
        end
    endgenerate

    wire active;
    sac_cell #(.SLOTS(SLOTS), .TAPS(TAPS), .LANES(LANES)) dut (
        .clk(clk), .w_clear(1'b0), .w_load(t == 8'd0), .w_in(t == 8'd0 ? packed_w : w_noise),
        .slots_next(slots_next), .phase_next(phase_next), .word_end(word_end),
        .psum_in(psum_in), .psum_out(psum_out), .active(active));

    // ---- at the end: every result word and the activity count ----
    reg [7:0] pulses = 8'd0;                                // `active` pulses so far
    always @(posedge clk) if (t < END) pulses <= pulses + active;
    integer n;
    reg [7:0] pairs;                                         // the spec's activity pairs
    always @(*) begin
        pairs = 8'd0;
        for (n = 0; n < PIXELS; n = n + 1) pairs = pairs + pair[n];
    end
    always @(*) if (t == END) assert(pulses == pairs);

    // ---- covers: the checks are reached with a negative weight, a wrap, a reserved code ----
    always @(*) if (t == END) begin
        cover(!packed_w[4] && pair == {PIXELS{1'b1}});                        // subtracting
        cover(packed_w[4] && packed_w[3:0] == 4'd7 && data[7:0] == 8'hff && packed_w[7:5] == 3'd0
              && init[31:0] == 32'h7fffffff);                                  // wraps past INT32_MAX
        cover(packed_w[3:0] > 4'd7 && data != 0);                              // a reserved code gates
    end
endmodule
`default_nettype wire
