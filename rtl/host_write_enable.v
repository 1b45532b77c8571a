`default_nettype none
// A host write enable kept beside the memory it enables (accelerator.v, the host port). The
// decision is registered as the port presents a write, in two halves: the request, from the
// port's enables and address alone (`req`), and whether the accelerator takes writes in that
// cycle (`ok`: not busy, no start taken). The memory's write enable is their AND, a cycle
// later, so the write lands at the second rising edge after it was presented.
//
// Every memory has an instance of its own, and so a copy of `ok`'s register of its own, placed
// near it: `busy` then reaches each copy through one LUT, with no address decode behind it
// (timing closure: `busy` through the whole decision to every memory's write port, 9.5 ns of
// routing across the die, had set the clock, and one flag shared by the memories had still
// been behind 4 LUTs of decode). The copies are kept: synthesis would merge registers with the
// same input into one.
module host_write_enable (
    input  wire clk,
    input  wire req,                    // the port presents a write to this memory
    input  wire ok,                     // the accelerator takes writes in this cycle
    output wire we                      // the memory's write enable, a cycle later
);
    reg req_q, ok_q;
    always @(posedge clk) req_q <= req;
    (* keep *) always @(posedge clk) ok_q <= ok;
    assign we = req_q && ok_q;
endmodule
`default_nettype wire
