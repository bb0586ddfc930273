/*
 * vramkit's C ABI: the memory manager as the allocator of CUDA programs.
 *
 * vramkit_malloc / vramkit_free have exactly the signatures of PyTorch's
 * CUDAPluggableAllocator (torch.cuda.memory.CUDAPluggableAllocator(path,
 * "vramkit_malloc", "vramkit_free")); the other entry points configure and
 * observe the allocator. Every function is thread-safe.
 *
 * One memory manager (context) per device, on the device's primary context,
 * made on first use. A pointer from vramkit_malloc never moves and its range is
 * not handed out again until it is freed and the work of its stream up to the
 * free has passed (other streams reuse it only after an event shows that).
 *
 * Configuration comes from vramkit_configure (before a device's first use) or
 * from the environment, read once at the first call:
 *   VRAMKIT_BUDGET             "70GiB", "0:70GiB,1:60GiB" (per device), or "none"
 *   VRAMKIT_RELEASE_THRESHOLD  cached free bytes kept ("1GiB"; default: all)
 *   VRAMKIT_BACKEND            "cuda" (default), "host" (host memory, for tests)
 *                              or "null" (no memory behind the pointers, which
 *                              must not be dereferenced: the allocator's own time)
 *   VRAMKIT_TRACE              timeline capacity in events (0: off, the default)
 *   VRAMKIT_HOST_RESERVE       what a host device's segment can grow to
 *                              (default 4GiB; its address space is taken up
 *                              front, its pages as they are touched; a null
 *                              device's, which take addresses only, 1TiB at least)
 *   VRAMKIT_FOLLOW_LIVE        "on" (default): free pages inside segments go
 *                              back to the device before new memory would take the
 *                              memory held past the slack over the peak in use;
 *                              "off" keeps them until trim or pressure
 *   VRAMKIT_SLACK              how far the memory held may pass the peak in use
 *                              ("1.9%" or "0.019", the default); past three
 *                              quarters of it, pages whose work finished go back,
 *                              past all of it an allocation waits for them
 *   VRAMKIT_PAGE_SIZE          the unit in which a segment's physical memory is
 *                              mapped, given back and moved ("4MiB", rounded up
 *                              to the device's granularity, at most 1GiB;
 *                              "default": the granularity, 2 MiB on current
 *                              GPUs): the driver's page calls cost about the same
 *                              per page whatever its size, while a page holding
 *                              any live byte stays mapped; with page growth the
 *                              smallest page
 *   VRAMKIT_PAGE_GROWTH        "on" (the default): pages double for each doubling
 *                              of the offset past 1024 of them (2 MiB pages up to
 *                              2 GiB of a segment, 4 MiB to 4 GiB, ...), at most
 *                              1/512 of the memory below; "off": the page
 *                              size everywhere
 *   VRAMKIT_BACKGROUND_UNMAP   "on" (the default): pages given back, and the
 *                              old places of pages moved, are unmapped by a
 *                              thread of the library, off the allocation's
 *                              path (the device gets the memory back a moment
 *                              later, at once on trim), and pages a stream
 *                              freed move to its next request without waiting
 *                              for it; "off": inside the call, after a wait
 * Sizes take the suffixes B, KiB, MiB, GiB, TiB, KB, MB, GB, TB.
 *
 * Streams: a stream given to vramkit_malloc, vramkit_free or
 * vramkit_record_stream is a stream of the device's primary context (or a
 * default stream) that stays alive until the memory allocated or recorded on it
 * is freed and vramkit_forget_stream returned for it (or the process ends):
 * vramkit records events on it after a free, when another stream needs the
 * memory. Destroying a stream earlier is undefined behaviour, as in CUDA.
 *
 * Functions that can fail return 0 on success and -1 on failure (NULL for
 * vramkit_malloc); vramkit_last_error then gives the message (per thread).
 * Every call but vramkit_last_error*, vramkit_get_stats, vramkit_device_open and
 * vramkit_summary clears the thread's last error first, so after a call that returns nothing
 * (vramkit_free, vramkit_record_stream, ...) vramkit_last_error_kind() says
 * whether it failed; reading the statistics or the summary after a refusal (to
 * explain it) keeps its message unless they fail themselves.
 */
#ifndef VRAMKIT_H
#define VRAMKIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface; vramkit_abi_version() returns the library's. */
#define VRAMKIT_ABI_VERSION 5

/* The kinds of error, as vramkit_last_error_kind returns them. */
enum vramkit_error_kind {
    VRAMKIT_OK = 0,
    VRAMKIT_OUT_OF_MEMORY = 1,  /* the device has no room now */
    VRAMKIT_OVER_BUDGET = 2,    /* the budget refuses the request */
    VRAMKIT_TOO_LARGE = 3,      /* the request can never fit */
    VRAMKIT_INVALID = 4,        /* a bad argument: unknown pointer, device or setting */
    VRAMKIT_NO_DEVICE = 5,      /* no driver or no such device */
    VRAMKIT_OTHER = 6           /* anything else (device lost, internal) */
};

/* Figures of one device's allocator, in bytes unless named otherwise. */
typedef struct vramkit_stats {
    uint64_t requested;       /* bytes asked for by live allocations */
    uint64_t in_use;          /* bytes of live allocations (rounded to the unit) */
    uint64_t reserved;        /* bytes held from the device */
    uint64_t peak_requested;  /* peaks: the most since the start or vramkit_reset_peaks */
    uint64_t peak_in_use;
    uint64_t peak_reserved;
    uint64_t live;            /* live allocations */
    uint64_t allocations;     /* allocations made so far */
    uint64_t releases;        /* allocations freed so far */
    uint64_t refusals;        /* requests refused for now (budget or device;
                                 not those too large ever to fit) */
    uint64_t budget;          /* the budget; UINT64_MAX: none */
    uint64_t free_in_holes;   /* free bytes inside reserved memory */
    uint64_t largest_free;    /* the largest free range */
    uint64_t pending_release; /* freed bytes waiting for other streams' work */
    uint64_t malloc_calls;    /* vramkit_malloc calls on this device */
    uint64_t malloc_ns;       /* nanoseconds spent inside them */
    uint64_t free_calls;      /* vramkit_free calls on this device */
    uint64_t free_ns;         /* nanoseconds spent inside them */
    uint64_t device_free;     /* free device memory (cuMemGetInfo); 0: unknown */
    uint64_t device_total;    /* total device memory; 0: unknown */
    uint64_t page_unmaps;     /* ranges of free pages given back to the device */
    uint64_t unmapped_bytes;  /* their bytes */
    uint64_t page_maps;       /* ranges of pages mapped again */
    uint64_t mapped_bytes;    /* their bytes */
    uint64_t page_moves;      /* ranges of free pages moved where a request needed memory */
    uint64_t moved_bytes;     /* their bytes */
    uint64_t grow_ns;         /* nanoseconds in the driver taking new memory (blocks, growths) */
    uint64_t page_ns;         /* nanoseconds in the driver giving back, mapping, moving pages */
    uint64_t give_back_ns;    /* nanoseconds freeing blocks and shrinking segments */
    uint64_t stream_wait_ns;  /* nanoseconds waiting for streams before memory is reused */
    uint64_t pages;           /* pages given back, mapped again and moved (paid per page) */
    uint64_t page_wait_ns;    /* of stream_wait_ns, waits before free pages went back or moved */
    uint64_t peak_live;       /* most allocations alive at once */
    uint64_t bytes_allocated; /* bytes of every allocation made so far (rounded, as in_use) */
    uint64_t bytes_freed;     /* bytes of every allocation freed so far */
    uint64_t segments;        /* blocks of device memory held now */
} vramkit_stats;

/* ---- PyTorch's CUDAPluggableAllocator interface ---- */

/* size bytes on device for work on stream (a cudaStream_t; NULL: the legacy
 * default stream). Size 0 gives a unique pointer of no usable bytes (counted
 * as 1 requested byte). NULL on failure (vramkit_last_error says why). */
void *vramkit_malloc(ssize_t size, int device, void *stream);
/* Frees ptr (from vramkit_malloc). size is not needed; device is the one given
 * to vramkit_malloc, or -1 to look in every device; stream is the stream of the
 * last use (NULL: the legacy default stream): a stream other than the one given
 * to vramkit_malloc counts as a use on it (see vramkit_record_stream). An
 * unknown pointer is reported (vramkit_last_error) and ignored. */
void vramkit_free(void *ptr, ssize_t size, int device, void *stream);
/* PyTorch's init hook: nothing to do until a device's first use. */
void vramkit_init(int device_count);
/* PyTorch's reset (empty_cache) hook: gives back every cached free byte. */
void vramkit_empty_cache(void);
/* PyTorch's memory-fraction hook: budget = fraction of the device's total. */
void vramkit_set_memory_fraction(double fraction, int device);
/* Declares that ptr's memory is also used by work on stream: when freed, it is
 * reused only after that stream passed the free (torch.Tensor.record_stream). */
void vramkit_record_stream(void *ptr, void *stream);
/* Waits until the memory freed on stream has been confirmed passed on every
 * device and forgets the stream: afterwards it may be destroyed. */
int vramkit_forget_stream(void *stream);

/* ---- configuration ---- */

/* Settings as "key=value" pairs separated by ',' or ';' with the keys of the
 * environment variables in lower case without the prefix: "budget=70GiB,
 * release_threshold=1GiB, backend=host, trace=100000". A budget or threshold
 * also applies to devices already in use. -1 for an unknown key or bad value
 * (then nothing of the string applies). */
int vramkit_configure(const char *settings);
/* The budget of one device in bytes (UINT64_MAX: none). A device's own budget
 * (from here, "budget=0:70GiB" or the memory fraction) stays when a later
 * setting gives every device one ("budget=60GiB"). */
int vramkit_set_budget(int device, uint64_t bytes);
/* The library's VRAMKIT_ABI_VERSION. */
uint32_t vramkit_abi_version(void);

/* ---- observation ---- */

int vramkit_get_stats(int device, vramkit_stats *out);
/* 1 if the device is open (an allocation, a figure or a setting reached it), 0 if
 * not, -1 for a bad index. Opens nothing, where vramkit_get_stats opens the device
 * (a context on it). */
int vramkit_device_open(int device);
/* The device's allocator table (like torch.cuda.memory_summary()) into buf,
 * NUL-terminated, truncated to cap bytes; returns the length of the whole text
 * (excluding the NUL): call again with a larger buffer if it is >= cap. */
size_t vramkit_summary(int device, char *buf, size_t cap);
/* The last error of this thread, as vramkit_summary fills buf; 0 if none. */
size_t vramkit_last_error(char *buf, size_t cap);
/* The kind of this thread's last error (enum vramkit_error_kind). */
int vramkit_last_error_kind(void);
/* Gives back every cached free byte of the device (-1: every device in use). */
int vramkit_trim(int device);
/* Sets every peak of the device's figures (the peak_* of vramkit_stats) to the
 * figure it follows now (-1: every device in use), as
 * torch.cuda.reset_peak_memory_stats does. */
int vramkit_reset_peaks(int device);
/* Starts recording the timeline of the device, capacity events at most. */
int vramkit_trace_start(int device, size_t capacity);
/* Writes the recorded timeline as Chrome trace JSON (chrome://tracing,
 * Perfetto) to path. */
int vramkit_trace_save(int device, const char *path);

/* ---- the host backend's model of streams (backend=host; for tests) ---- */

/* stream "runs work" until resumed: memory it frees meanwhile is not handed to
 * other streams before it passes; vramkit waiting for it resumes it. */
int vramkit_host_hold_stream(int device, void *stream);
int vramkit_host_resume_stream(int device, void *stream);
/* 1 while held, 0 once it passed, -1 on error. */
int vramkit_host_stream_held(int device, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* VRAMKIT_H */
