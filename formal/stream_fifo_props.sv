// Formal properties of rtl/stream_fifo.v (read with yosys `read_verilog -formal -sv`; the RTL
// itself is read as plain Verilog-2005 and never edited). Jobs: formal/jobs.toml.
//
// What is proven, from reset on, for every input sequence (push, pop, data, tag all free):
//   - count stays in 0..DEPTH, `empty` is count == 0;
//   - count follows the module's contract: +1 for an accepted push (push while not full), -1
//     for an accepted pop (pop while not empty), both or neither: unchanged. So a push while
//     full and a pop while empty are ignored: the FIFO never overflows or underflows;
//   - order (two tagged values): the free input `tag` picks any accepted push as value A; the
//     next accepted push is B. A leaves at the pop that follows exactly the entries that were
//     ahead of it, with its data at `head`, and the next pop after A shows B. A and B being
//     any two consecutive writes, nothing is lost, duplicated or reordered.
// Covers: the FIFO gets full, drains to empty after being full, and a tagged pair comes out.
`default_nettype none
module stream_fifo_props #(
    parameter WIDTH = 3,        // data bits; the FIFO never computes on data, so a few bits
                                // (A and B can differ) stand for the AXI top's 33
    parameter DEPTH = 4,        // entries, a power of two (the AXI top's FIFO_DEPTH default)
    parameter AW = 2            // log2(DEPTH), as the module wants it
) (
    input wire             clk,
    input wire             rst,
    input wire             push,
    input wire [WIDTH-1:0] push_data,
    input wire             pop,
    input wire             tag         // free: this accepted push is the tracked value A
);
    wire [WIDTH-1:0] head;
    wire             empty;
    wire [AW:0]      count;
    stream_fifo #(.WIDTH(WIDTH), .DEPTH(DEPTH), .AW(AW)) dut (
        .clk(clk), .rst(rst), .push(push), .push_data(push_data), .pop(pop),
        .head(head), .empty(empty), .count(count));

    // the first cycle resets (the state before it is arbitrary); rst stays free afterwards
    reg started = 1'b0;
    always @(posedge clk) started <= 1'b1;
    always @(*) if (!started) assume(rst);

    localparam [AW:0] FULL = DEPTH;
    wire acc_push = push && count != FULL;      // what the module documents as accepted
    wire acc_pop = pop && !empty;

    // ---- count and flags ----
    always @(*) if (started) begin
        assert(count <= FULL);
        assert(empty == (count == 0));
    end
    always @(posedge clk) if (started) begin
        if ($past(rst)) assert(count == 0);
        else assert({1'b0, count} == {1'b0, $past(count)} + $past(acc_push) - $past(acc_pop));
    end

    // ---- order: two consecutive writes A and B ----
    localparam IDLE = 2'd0, A_IN = 2'd1, B_NEXT = 2'd2;
    reg [1:0]       st = IDLE;
    reg [AW:0]      ahead;              // entries before A still in the FIFO (A_IN)
    reg             b_in;               // B has been pushed
    reg [WIDTH-1:0] a_val, b_val;
    always @(posedge clk) begin
        if (rst) st <= IDLE;
        else case (st)
            IDLE: if (acc_push && tag) begin
                st <= A_IN;
                a_val <= push_data;
                b_in <= 1'b0;
                ahead <= count - acc_pop;
            end
            A_IN: begin
                if (acc_push && !b_in) begin
                    b_in <= 1'b1;
                    b_val <= push_data;
                end
                if (acc_pop) begin
                    if (ahead == 0) st <= B_NEXT;
                    else ahead <= ahead - 1'b1;
                end
            end
            B_NEXT: begin
                if (acc_push && !b_in) begin
                    b_in <= 1'b1;
                    b_val <= push_data;
                end
                if (acc_pop) st <= IDLE;
            end
            default: st <= IDLE;
        endcase
    end
    always @(*) if (started && !rst) begin
        if (st == A_IN) begin
            // A is inside behind `ahead` entries; nothing but B and later ones behind it
            if (b_in) assert({1'b0, count} > {1'b0, ahead} + 1'b1);
            else assert({1'b0, count} == {1'b0, ahead} + 1'b1);
            if (acc_pop && ahead == 0) assert(head == a_val);
        end
        if (st == B_NEXT) begin
            assert(b_in ? count != 0 : count == 0);     // after A, B is the first one in
            if (acc_pop) assert(b_in && head == b_val);
        end
    end

    // ---- induction strengthening: the module's state, as the order properties need it ----
    // The probes are driven by the job's script after `flatten` (formal/jobs.toml: `probes`,
    // `connect -set p_n dut.n` ...): read_verilog has no hierarchical references. They name
    // the state the ports cannot show (the held entries), so that k-induction closes; the
    // properties above are what is claimed, these only make them provable without bounds.
    (* keep *) wire [AW:0]          p_n;           // dut.n, entries held
    (* keep *) wire [AW-1:0]        p_rd, p_wr;    // dut.rd, dut.wr
    (* keep *) wire [DEPTH*WIDTH-1:0] p_mem;       // {dut.mem[DEPTH-1], ..., dut.mem[0]}
    wire [AW-1:0] a_at = p_rd + ahead[AW-1:0];     // where A is held
    wire [AW-1:0] b_at_a = a_at + 1'b1;            // where B is held while A is
    always @(*) if (started && !rst) begin
        assert(p_n == count);
        assert(p_wr - p_rd == p_n[AW-1:0]);
        if (st == A_IN) begin
            assert(p_mem[a_at*WIDTH +: WIDTH] == a_val);
            if (b_in) assert(p_mem[b_at_a*WIDTH +: WIDTH] == b_val);
        end
        if (st == B_NEXT && b_in) assert(p_mem[p_rd*WIDTH +: WIDTH] == b_val);
    end

    // ---- covers: the properties are not vacuous ----
    reg was_full = 1'b0;
    always @(posedge clk) if (rst) was_full <= 1'b0; else if (count == FULL) was_full <= 1'b1;
    always @(*) if (started && !rst) begin
        cover(count == FULL);                           // fills
        cover(was_full && empty);                       // and drains
        cover(st == B_NEXT && acc_pop);                 // a tagged pair comes out (B after A)
    end
endmodule
`default_nettype wire
