"""Memory freed while another stream still writes it is not handed out too early.

Case "free_on_a": a tensor made on stream A gets a long kernel (torch.cuda._sleep)
and then sentinel writes (1.0) on A, and is freed on A while that work is queued. A
tensor of the same size is then made on stream B and written (2.0) at once. Either
vramkit gives B other memory, or B's write runs after A's: after synchronizing,
B's tensor must hold 2.0 everywhere.

Case "record_stream": a tensor made on the default stream is written by stream B
(after a long kernel), declared with record_stream(B) and freed; a new tensor made
and written (2.0) on the default stream must hold 2.0 everywhere after synchronizing.

Each case checks that the other stream was still busy when the new tensor was
asked for, so the hazard was really there. Prints one JSON line per case.
"""

import json

import vramkit.torch

vramkit.torch.enable()

import torch  # noqa: E402

N = 16 << 20  # float32 elements: 64 MiB
CYCLES = 2_000_000_000  # about a second of GPU clock


def check(name, u, busy, ptr_old, ptr_new):
    torch.cuda.synchronize()
    wrong = int((u != 2.0).sum().item())
    print(json.dumps({"case": name, "busy": busy, "reused": ptr_old == ptr_new, "wrong": wrong}))
    assert busy, f"{name}: the other stream had finished already; the test proved nothing"
    assert wrong == 0, f"{name}: {wrong} elements were overwritten by the other stream's work"


torch.cuda.init()
A = torch.cuda.Stream()
B = torch.cuda.Stream()

# free_on_a
with torch.cuda.stream(A):
    t = torch.empty(N, device="cuda")
    torch.cuda._sleep(CYCLES)
    for _ in range(20):
        t.fill_(1.0)
    ptr_a = t.data_ptr()
    del t
busy = not A.query()
with torch.cuda.stream(B):
    u = torch.empty(N, device="cuda")
    u.fill_(2.0)
    ptr_b = u.data_ptr()
check("free_on_a", u, busy, ptr_a, ptr_b)
del u

# record_stream
main = torch.cuda.current_stream()
t = torch.empty(N, device="cuda")
t.zero_()
B.wait_stream(main)
with torch.cuda.stream(B):
    torch.cuda._sleep(CYCLES)
    for _ in range(20):
        t.fill_(1.0)
t.record_stream(B)
ptr_t = t.data_ptr()
del t
busy = not B.query()
u = torch.empty(N, device="cuda")
u.fill_(2.0)
check("record_stream", u, busy, ptr_t, u.data_ptr())
print("OK")
