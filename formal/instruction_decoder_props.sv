// Formal properties of rtl/instruction_decoder.v against formal/isa_check_spec.v (read with yosys
// `read_verilog -formal -sv`; the RTL is read as plain Verilog-2005 and never edited).
// Jobs: formal/jobs.toml.
//
// Only the decoder's ports are compared (error, error_code, exec_lw, exec_mm, busy, busy_next,
// done, pc, tile_rows, tile_cols): its internal pipeline may change, and the claims must hold for any
// decoder that runs the ISA of docs/isa.md on the cycle model's timing.
//
// The wrapper plays the accelerator top around the decoder (rtl/accelerator.v): the instruction
// memory holds 2^IAW words fixed at the start (anyconst: every program), read with one cycle of
// latency; `go` is the top's accepted start (never while the top is busy), which reaches the
// decoder as `start` four cycles later, with start_pc held (run_pc) and the decoder's address
// on the memory from the cycle after `go` on; otherwise (idle, and in the cycle of `go`) the
// memory's address is anything (the host's).
//
// A reference run (below) follows the program from the start: instruction i is fetched at cycle
// T_i (T_0 = 0 = the cycle after `start`, T_i+1 = T_i + its cycles by the cycle model) and is
// resolved at T_i + 2, after fetch and decode/check: if the spec gives it an error code (or pc is
// past IMEM_DEPTH: PC_OVERFLOW), or it is HALT, the run ends there. Claimed, from reset on:
//   - at T_i + 2 exactly, pc = the instruction's index and
//       an illegal word (or pc past the memory): done rises with error and the spec's code, and
//       neither exec_lw nor exec_mm rises (it never executes);
//       HALT: done rises without error;
//       a legal LOAD_WEIGHTS (MATMUL): exec_lw (exec_mm) rises, the other does not, no done;
//   - nothing else happens during a run: no exec rise, busy up and done low until its end;
//   - while exec_lw or exec_mm is up, tile_rows/tile_cols are the tile of the last LOAD_WEIGHTS
//     executed since the start (what the checks of a MATMUL use);
//   - exec_lw and exec_mm never together, only while busy; error only with done; busy and done
//     never together; after reset and between runs nothing runs and the status (done, error,
//     error_code, pc) holds; busy is busy_next of the cycle before (the top registers copies).
// PROGRAM = 1 (the bounded liveness job) fixes the program to LOAD_WEIGHTS, MATMUL, HALT at
// words 0..2 with legal fields (any the spec accepts), one start at cycle 1 from pc 0, and
// claims in addition that done rises without error exactly at the cycle model's total.
// Covers: an error of each code 1..10, a HALT reached, a MATMUL executed (PROGRAM = 1: done
// reached, with the largest and the pixel-sum program).
`default_nettype none
module instruction_decoder_props #(
    // the accelerator's sizes, small so that each check is cheap but every comparison of
    // docs/isa.md is still exercised (2 rows and columns: a tile smaller than the array and the
    // slots = tile_cols x G product; DDEPTH 4: P = H x W up to 4, MATMULs of 41..67 cycles)
    parameter ROWS = 2,
    parameter COLS = 2,
    parameter CMAX = 4,
    parameter DDEPTH = 4,
    parameter PDEPTH = 4,
    parameter WDEPTH = 4,
    parameter BDEPTH = 4,
    parameter SDEPTH = 2,
    parameter IMEM_DEPTH = 3,       // not a power of two: pc 3 is past the memory although the
                                    // address bits reach a fourth word
    parameter IAW = 2,              // instruction address bits, clog2(IMEM_DEPTH) as the top has it
    parameter PROGRAM = 0           // 1: the fixed legal program and its completion (above)
) (
    input wire           clk,
    input wire           rst,
    input wire           go,            // the top's start, accepted
    input wire [IAW:0]   go_pc,         // start_pc in that cycle
    input wire [IAW-1:0] idle_addr      // the memory's address while the decoder is idle
);
    localparam WORDS = 1 << IAW;

    // ---- the instruction memory: a fixed program, one cycle of read latency ----
    (* anyconst *) reg [128*WORDS-1:0] imem;
    function [127:0] word_at;
        input [IAW-1:0] a;
        word_at = imem[128*a +: 128];
    endfunction

    // ---- the top: start four cycles after `go`, start_pc held ----
    reg started = 1'b0;
    always @(posedge clk) started <= 1'b1;
    reg [7:0] cyc = 8'd0;                   // cycles since the first (saturating)
    always @(posedge clk) if (cyc != 8'hff) cyc <= cyc + 8'd1;
    reg start_t = 1'b0, start_q = 1'b0, start_qq = 1'b0, start = 1'b0;
    reg [IAW:0] run_pc;
    wire busy, busy_next, done, error, exec_lw, exec_mm;
    always @(posedge clk) begin
        start_t <= !rst && go;
        start_q <= !rst && start_t;
        start_qq <= !rst && start_q;
        start <= !rst && start_qq;
        if (rst) run_pc <= {(IAW+1){1'b0}};
        else if (go) run_pc <= go_pc;
    end
    always @(*) begin
        if (!started) assume(rst);
        if (go) assume(!rst && !busy && !start_t && !start_q && !start_qq && !start);  // the top takes a start only while idle
    end
    wire [IAW-1:0] imem_addr;
    wire [IAW-1:0] mem_addr = (busy || start_t || start_q || start_qq || start) ? imem_addr : idle_addr;
    reg  [127:0]   imem_data;
    always @(posedge clk) imem_data <= word_at(mem_addr);

    wire [3:0]   error_code;
    wire [IAW:0] pc;
    wire [7:0]   tile_rows, tile_cols;
    instruction_decoder #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH), .IMEM_DEPTH(IMEM_DEPTH), .IAW(IAW)) dut (
        .clk(clk), .rst(rst), .start(start), .start_pc(run_pc), .imem_addr(imem_addr),
        .imem_data(imem_data), .busy(busy), .busy_next(busy_next), .done(done), .error(error),
        .error_code(error_code), .pc(pc), .exec_lw(exec_lw), .exec_mm(exec_mm),
        .k(), .retire(), .rows(), .cols(), .w_addr(), .b_addr(), .s_addr(), .mode(), .acc_in(),
        .shift_en(), .group(), .fill(), .height(), .width(), .in_addr(), .out_addr(), .in_ch(),
        .out_ch(), .acc_addr(), .pixels(), .tile_rows(tile_rows), .tile_cols(tile_cols),
        .mm_pre(), .pre_in_ch(), .pre_shift_en());

    // ---- the reference run ----
    reg         running = 1'b0;
    reg [IAW:0] exp_pc;                     // the instruction being run
    reg [7:0]   s_rows, s_cols;             // the tile loaded since the start
    reg [15:0]  t, due;                     // cycles since the start; its resolution cycle
    wire [127:0] cur = word_at(exp_pc[IAW-1:0]);
    wire [3:0]   c_word;
    wire [31:0]  c_cycles;
    isa_check_spec #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH)) spec (
        .word(cur), .tile_rows(s_rows), .tile_cols(s_cols), .code(c_word), .cycles(c_cycles));
    wire        in_mem = {{(31-IAW){1'b0}}, exp_pc} < IMEM_DEPTH;
    wire [3:0]  want = in_mem ? c_word : 4'd10;              // the code it must get, 0: none
    wire        ends = want != 4'd0 || cur[3:0] == 4'd15;    // an error or HALT ends the run
    wire        cur_lw = cur[3:0] == 4'd1, cur_mm = cur[3:0] == 4'd2;
    wire        resolve = running && t == due;
    always @(posedge clk) begin
        if (rst) running <= 1'b0;
        else if (start) begin
            running <= 1'b1;
            exp_pc <= run_pc;
            s_rows <= 8'd0;
            s_cols <= 8'd0;
            t <= 16'd0;
            due <= 16'd2;
        end else if (running) begin
            t <= t + 16'd1;
            if (resolve) begin
                if (ends) running <= 1'b0;
                else begin
                    exp_pc <= exp_pc + 1'b1;
                    due <= due + c_cycles[15:0];
                    if (cur_lw) begin
                        s_rows <= cur[15:8];
                        s_cols <= cur[23:16];
                    end
                end
            end
        end
    end
    wire [15:0] tile_now = (resolve && cur_lw) ? cur[23:8] : {s_cols, s_rows};

    // ---- the decoder's ports, against it ----
    reg q_rst = 1'b1, q_exec = 1'b0, q_done = 1'b0, q_error = 1'b0, q_busy_next = 1'b0;
    reg [3:0] q_code;
    reg [IAW:0] q_pc;
    always @(posedge clk) begin
        q_rst <= rst;
        q_exec <= exec_lw || exec_mm;
        q_done <= done;
        q_error <= error;
        q_busy_next <= busy_next;
        q_code <= error_code;
        q_pc <= pc;
    end
    wire exec_rise = (exec_lw || exec_mm) && !q_exec;
    wire done_rise = done && !q_done;
    always @(*) if (started && !rst) begin
        assert(!(exec_lw && exec_mm));
        if (exec_lw || exec_mm) assert(busy);
        if (error) assert(done);
        assert(!(busy && done));
        if (!q_rst) assert(busy == q_busy_next);
        if (q_rst) assert(!busy && !done && !error && !exec_lw && !exec_mm);   // after reset
        if (!running) begin
            assert(!busy && !exec_lw && !exec_mm);
            if (!q_rst) assert(done == q_done && error == q_error && error_code == q_code && pc == q_pc);
        end else if (resolve) begin
            assert(pc == exp_pc);
            if (ends) begin
                assert(done_rise && !busy && !exec_lw && !exec_mm);
                assert(error == (want != 4'd0));
                if (want != 4'd0) assert(error_code == want);
            end else begin
                assert(exec_rise && busy && !done);
                assert(exec_lw == cur_lw && exec_mm == cur_mm);
            end
        end else
            assert(busy && !done && !exec_rise);
        if (running && (exec_lw || exec_mm)) assert({tile_cols, tile_rows} == tile_now);
    end

    // ---- covers (PROGRAM = 1 has its own below: its program has no error) ----
    genvar e;
    generate
        if (!PROGRAM) begin : any_program
            for (e = 1; e <= 10; e = e + 1) begin : code
                always @(*) if (started && !rst) cover(done_rise && error && error_code == e);
            end
            always @(*) if (started && !rst) begin
                cover(done_rise && !error);                 // a HALT
                cover(exec_rise && exec_mm);                // a MATMUL executes
            end
        end
    endgenerate

    // ---- PROGRAM = 1: LOAD_WEIGHTS, MATMUL, HALT, legal, reach done in the cycle model's time ----
    wire [127:0] w0 = imem[127:0], w1 = imem[255:128], w2 = imem[383:256];
    wire [3:0]  c0, c1, c2;
    wire [31:0] n0, n1, n2;
    isa_check_spec #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH)) spec0 (
        .word(w0), .tile_rows(8'd0), .tile_cols(8'd0), .code(c0), .cycles(n0));
    isa_check_spec #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH)) spec1 (
        .word(w1), .tile_rows(imem[15:8]), .tile_cols(imem[23:16]), .code(c1), .cycles(n1));
    isa_check_spec #(.ROWS(ROWS), .COLS(COLS), .CMAX(CMAX), .DDEPTH(DDEPTH), .PDEPTH(PDEPTH),
        .WDEPTH(WDEPTH), .BDEPTH(BDEPTH), .SDEPTH(SDEPTH)) spec2 (
        .word(w2), .tile_rows(imem[15:8]), .tile_cols(imem[23:16]), .code(c2), .cycles(n2));
    // go at cycle 1, start at 5, T_0 = 0 at cycle 6; HALT's fetch at T_2 = n0 + n1, done at + 2
    wire [31:0] finish = 32'd6 + n0 + n1 + n2;
    generate
        if (PROGRAM) begin : program
            always @(*) begin
                assume(rst == !started);
                assume(go == (cyc == 8'd1));
                if (go) assume(go_pc == 0);
                assume(w0[3:0] == 4'd1 && c0 == 4'd0);
                assume(w1[3:0] == 4'd2 && c1 == 4'd0);
                // (word 2 free, so that the reference run checks any word after a MATMUL, made
                // the check take over 13 minutes: HALT only)
                assume(w2[3:0] == 4'd15 && c2 == 4'd0);
                if (started) begin
                    if (cyc < finish) assert(!done);
                    if (cyc == finish) assert(done && !error && pc == 2);
                end
                if (cyc == finish) begin
                    cover(done && !error);                                  // done reached
                    cover(w1[5:4] == 2'd3);                         // pixel-sum mode
                    cover(n1 == 32'd2 + 32'd8 * DDEPTH + 32'd24 + COLS + ROWS + 32'd4 + 32'd1);  // the longest
                end
            end
        end
    endgenerate
endmodule
`default_nettype wire
