/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one header shared by the BPF programs and user space: record layouts,
 * limits and counters. Fixed-width types only, so both sides agree on every
 * byte; sizes are pinned by _Static_assert below.
 */
#ifndef PT_ABI_H
#define PT_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Nesting of probed calls tracked per thread in BPF. Deeper calls are
 * counted in pt_counters.depth_overflow and produce no records. */
#define PT_MAX_DEPTH 32

/* Expressions read per call of a function (tokens, kv_len, batch). */
#define PT_MAX_VALS 3

/* Low 32 bits of a uprobe's BPF cookie carry the function id (fid). */
#define PT_COOKIE_FID_MASK 0xffffffffULL

/*
 * Several processes (-p PID,PID..., --children) share one BPF object. Each
 * gets an index (0..PT_MAX_PROCS-1) that rides in the high bits of its
 * fids: fids are unique across processes, and every probe hit checks that
 * its process is the one the probe was attached for (the procs map), so a
 * forked child or an exec'ed image never reports as its parent.
 */
#define PT_MAX_PROCS 256
#define PT_FID_PROC_SHIFT 20
#define PT_FID_LOCAL_MASK ((1u << PT_FID_PROC_SHIFT) - 1)
#define PT_FID_PROC(fid) ((fid) >> PT_FID_PROC_SHIFT)
#define PT_FID_MAKE(pidx, local) (((__u32)(pidx) << PT_FID_PROC_SHIFT) | (__u32)(local))

/*
 * Where one process's CPython keeps what the BPF programs read: byte
 * offsets from its version's row (user/python/pylayout.c) or from its own
 * _Py_DebugOffsets, filled by pt_py_layout__offsets(). Each traced process
 * has its own (proftrace.bpf.c: struct pt_bpf_proc; pysample.bpf.c: struct
 * pt_sample_proc), so one run can trace processes of different Python
 * versions. A 0 where an offset cannot be 0 means "this version has none".
 */
struct pt_py_offsets {
	__u32 minor; /* 3.<minor>; 0: the process runs no CPython BPF reads */
	/* frames: _PyEval_EvalFrameDefault's argument, the sampler's walk */
	__u32 frame_arg;	/* which argument is the frame, 1-based */
	__u32 frame_code;	/* frame -> code object (f_code, f_executable) */
	__u32 frame_back;	/* f_back / previous */
	__u32 frame_lasti;	/* int f_lasti (< 3.11); 0: frame_ip instead */
	__u32 frame_ip;		/* prev_instr / instr_ptr (3.11+) */
	__u32 frame_owner;	/* owner byte (3.11+); 0: none */
	__u32 owner_cstack;	/* owners >= this are shim frames (3.12+); 256: none */
	__u32 frame_size;	/* bytes from the frame start that hold the above */
	__u32 frame_localsplus; /* localsplus[0]: arguments and locals */
	__u64 code_mask;	/* a frame slot (code, locals) & code_mask is the object:
				 * 3.14 tags its stack references in the low bits */
	/* code objects */
	__u32 code_filename; /* co_filename; co_name follows at +8 */
	__u32 code_firstlineno;
	__u32 code_flags;    /* co_flags; 0: no generator creation frames (< 3.11) */
	__u32 code_adaptive; /* first instruction (3.11+) */
	__s32 gen_new_lim;   /* a creation frame: ip - first instruction < this */
	/* the thread states (stack sampler) */
	__u32 runtime_interp_head; /* _PyRuntime -> first PyInterpreterState */
	__u32 interp_tstate_head;  /* -> first PyThreadState */
	__u32 tstate_next;
	__u32 tstate_thread_id; /* pthread_self() of the thread */
	__u32 tstate_frame;	/* frame (< 3.11), cframe (3.11, 3.12), current_frame */
	__s32 cframe_frame;	/* >= 0: tstate_frame is a _PyCFrame, the frame here */
	/* objects read for values (tokens=, arg:, ret) */
	__u32 type_flags; /* PyTypeObject.tp_flags */
	__u32 long_tag;	  /* 1: ints carry lv_tag (3.12+), not a signed ob_size */
	/* dicts and instances (attributes); keys_hdr 0: not readable */
	__u32 str_hash;	      /* PyASCIIObject.hash */
	__u32 dict_keys;      /* PyDictObject.ma_keys */
	__u32 dict_values;    /* .ma_values */
	__u32 keys_hdr;	      /* PyDictKeysObject header size: the indices follow */
	__u32 keys_size;      /* dk_size (< 3.11); 0: the log2 fields */
	__u32 keys_log2;      /* dk_log2_size (3.11+) */
	__u32 keys_log2ix;    /* dk_log2_index_bytes */
	__u32 keys_kind;      /* dk_kind */
	__u32 keys_nentries;  /* dk_nentries */
	__u32 values_items;   /* PyDictValues: values[0] */
	__u32 values_hdr;     /* 1: 3.13's capacity byte at values + 0 */
	__s32 managed_dict;   /* dict * (3.12: a tagged word) before the object */
	__s32 managed_values; /* 3.11: PyDictValues * before the object */
	__u32 tuple_item;     /* PyTupleObject.ob_item[0] */
};

/* A traced process, as proftrace.bpf.c's procs map holds it (by process
 * index): its tgid (0: ended) and its interpreter. */
struct pt_bpf_proc {
	__u32 tgid;
	__u32 pad;
	struct pt_py_offsets py;
};

enum pt_rec_type {
	PT_REC_ENTRY = 1,   /* a probed function was entered */
	PT_REC_EXIT = 2,    /* it returned: t_entry..t_exit is the whole call */
	PT_REC_DLOPEN = 3,  /* the dynamic linker changed the link map */
	PT_REC_PYCODE = 4,  /* a Python code object not seen before started: code */
	PT_REC_SAMPLE = 5,  /* struct pt_sample: on-CPU Python stack (pysample.bpf.c) */
	PT_REC_OFFCPU = 6,  /* struct pt_sample: a thread's off-CPU interval */
	PT_REC_VALUES = 7,  /* struct pt_rec_vals: values read at a call's entry or exit */
	PT_REC_FORK = 8,    /* a traced process forked: pid the parent, tid the child's pid */
	PT_REC_EXEC = 9,    /* a traced process (pid) replaced its image: exec */
	PT_REC_ATTR = 10,   /* struct pt_rec_attr: where does this type keep that attribute? */
	PT_REC_TEXIT = 11,  /* a thread (tid) of a traced process that hit a probe ended:
			     * the last record of that thread; t_entry its time */
	PT_REC_USTACK = 12, /* struct pt_ustack: a sample's native registers and stack */
};

/*
 * Python functions are found by code object, in BPF, through the py_codes
 * map (code object address -> struct pt_py_code). A code object not in the
 * map (or whose fingerprint changed: the address was freed and reused) is
 * entered as PT_FID_PY_PENDING and announced with a PT_REC_PYCODE record;
 * user space reads it out of the target, matches it against the config and
 * stores its fid, or PT_FID_PY_NONE, so later calls of unconfigured code
 * cost one map lookup and no record. Records of pending calls carry the
 * code address; user space resolves them (the PYCODE record comes first in
 * the ring).
 */
#define PT_FID_PY_NONE 0xffffffffu
#define PT_FID_PY_PENDING 0xfffffffeu

/* py_codes' key: code addresses are per process (forked workers share
 * them), so the process is part of the key. */
struct pt_py_key {
	__u32 tgid;
	__u32 pad;
	__u64 code;
};

/* PT_REC_PYCODE: the code object and the fingerprint BPF saw, so user
 * space can tell when the object it reads later is no longer that one
 * (freed and its address reused in between). Same size as pt_rec. */
struct pt_rec_pycode {
	__u32 type; /* PT_REC_PYCODE */
	__u32 firstlineno;
	__u32 pid;
	__u32 tid;
	__u64 code;
	__u64 filename;
	__u64 name;
	__u64 pad;
};

struct pt_py_code {
	__u64 filename; /* co_filename and co_name object addresses and */
	__u64 name;	/* co_firstlineno: a reused address will not match */
	__u32 firstlineno;
	__u32 fid; /* PT_FID_PY_NONE: not configured */
	/* Values read at the call (struct pt_val_spec of fid): the frame
	 * slot (localsplus index) of each PT_VSRC_PYARG expression in this
	 * code object, -1 when it has no such name. vals: fid has a spec. */
	__s16 slot[PT_MAX_VALS];
	__u16 vals;
};

/*
 * One record in the ring buffer. EXIT records are self-contained (they carry
 * the entry time kept in BPF), so a lost ENTRY record never corrupts a call.
 * depth is the number of probed calls open on the thread *outside* this one.
 */
struct pt_rec {
	__u32 type; /* enum pt_rec_type */
	__u32 fid;
	__u32 pid;
	__u32 tid;
	__u64 t_entry; /* CLOCK_MONOTONIC ns (bpf_ktime_get_ns) */
	__u64 t_exit;  /* 0 for ENTRY */
	__u16 depth;   /* < PT_MAX_DEPTH */
	__u16 flags;   /* PT_RECF_* */
	/* The frame probe's running count of unnamed frames on this thread
	 * (wraps at 2^32): the difference between two records of a thread is
	 * how many it trapped between them, so each interval's share of that
	 * cost can be taken out (aggregate/overhead.c). 0 without it. */
	__u32 unnamed;
	__u64 code; /* Python code object: PYCODE and pending calls; else 0 */
};

/* EXIT whose ENTRY record could not be written (ring full at entry). */
#define PT_RECF_ENTRY_LOST 0x1
/*
 * An agent activation's EXIT whose t_entry (PT_RECF_AGENT_ENTRY) or
 * t_exit (PT_RECF_AGENT_EXIT) is the Python agent's own clock read, not
 * the probe hit's: the moment its body began (right after its enter
 * probe returned) and the moment it ended (right before its exit probe
 * was called), both checked in BPF to lie between the hits around them
 * (PT_COOKIE_AGENT_CLOCKS). The ENTRY record keeps the hit's time (what
 * the call's values are keyed by); the aggregator moves what that call
 * opened to the later one when the EXIT comes.
 */
#define PT_RECF_AGENT_ENTRY 0x2
#define PT_RECF_AGENT_EXIT 0x4

/*
 * Values read out of the target at a call (issue 7: tokens, kv_len and
 * batch per step). A function with expressions has a struct pt_val_spec
 * in BPF's val_specs map (by fid); native probes carry
 * PT_COOKIE_VALS in their cookie and py_codes entries slot[] so the
 * common call pays no lookup. Expressions on arguments are read at entry
 * and sent right after the ENTRY record; those on the return value at
 * exit, right before the EXIT record. Both records carry the t_entry of
 * the call's ENTRY record (the hit's time even where the EXIT has the
 * agent's: PT_RECF_AGENT_ENTRY). Reading is all in BPF: the value is the
 * one of that call.
 */
#define PT_VAL_MAX_ELEMS 4096	    /* elements of a list read per call */
#define PT_COOKIE_VALS (1ULL << 32) /* the function has a pt_val_spec */
/* The agent's probe sites pass its clock reads (PTAG_FLAG_CLOCKS). */
#define PT_COOKIE_AGENT_CLOCKS (1ULL << 33)
#define PT_PY_SLOT_NONE (-1)

enum pt_val_src {
	PT_VSRC_ARG = 1,   /* native: integer argument argn (0-based, ABI order) */
	PT_VSRC_RET = 2,   /* native: integer return value; py: the returned object */
	PT_VSRC_PYARG = 3, /* py: frame slot (pt_py_code.slot[i]) at entry */
	PT_VSRC_PYRET = 4, /* py: the returned object, at exit */
};

enum pt_val_op {
	PT_VOP_INT = 1,	       /* native: the register; py: an int object's value */
	PT_VOP_LEN = 2,	       /* py: len() of list, tuple, dict, str, bytes */
	PT_VOP_AGG = 3,	       /* py: a list or tuple of ints: n, sum, min, max */
	PT_VOP_ELEMS = 4,      /* PT_VOP_AGG and the elements, in the record's tail */
	PT_VOP_AUTO = 5,       /* py: an int (value) or a list/tuple of ints (PT_VOP_AGG) */
	PT_VOP_AUTO_ELEMS = 6, /* py: an int, or a list/tuple of ints with its elements */
};

/* Width of a native integer: a 32-bit int leaves the upper half of its
 * register undefined (x86-64 SysV), so it must be cut, not read whole. */
enum pt_val_width {
	PT_VW_I64 = 0,
	PT_VW_I32 = 1,
	PT_VW_U32 = 2,
};

struct pt_val_expr {
	__u8 src; /* enum pt_val_src */
	__u8 op;  /* enum pt_val_op */
	__u8 argn;
	__u8 width; /* enum pt_val_width (native) */
	__u8 attr;  /* py: read an attribute of the object first (attr_locs) */
	__u8 pad[3];
};

struct pt_val_spec {
	__u32 n; /* expressions in use */
	__u32 pad;
	struct pt_val_expr e[PT_MAX_VALS];
};

/*
 * Attributes (`arg:req.num_tokens`): one level, on ordinary instances.
 * Where an object keeps the attribute depends on its type; BPF asks user
 * space once per (type, function, expression) with a PT_REC_ATTR record
 * and meanwhile counts the value as PT_VST_ATTR_PENDING; user space works
 * out the location (user/pyattr.c, which also holds the reference of the
 * read path BPF runs) and stores it in the attr_locs map.
 */
/* Where instances keep the attribute (struct pt_pyattr_loc.kind). */
enum pt_pyattr_kind {
	PT_PYATTR_K_NONE = 0,
	PT_PYATTR_K_SLOT,	 /* a T_OBJECT(_EX) member: PyObject * at obj + off */
	PT_PYATTR_K_DICTPTR,	 /* dict * at obj + off (tp_dictoffset > 0) */
	PT_PYATTR_K_MANAGED_311, /* values * at obj + L->managed_values, else dict *
				  * at obj + L->managed_dict */
	PT_PYATTR_K_MANAGED_312, /* w = *(obj + L->managed_dict): w & 1 ? values
				  * at w + 1 : dict w */
	PT_PYATTR_K_INLINE_313,	 /* values inline at obj + off while their valid
				  * byte is set, else dict * at obj + L->managed_dict */
	PT_PYATTR_K_MANAGED_313, /* dict * at obj + L->managed_dict */
};

/* struct pt_pyattr_loc.flags. NONE_IF_NULL: a T_OBJECT member, whose NULL
 * reads as None. CLASS: the MRO has a non-data descriptor or a plain class
 * attribute of that name, which applies when the instance has none.
 * GETATTR: a Python __getattr__ runs when the lookup fails. */
#define PT_PYATTR_F_NONE_IF_NULL 0x1
#define PT_PYATTR_F_CLASS 0x2
#define PT_PYATTR_F_GETATTR 0x4

struct pt_pyattr_loc {
	__u64 type;	   /* the type this location is for */
	__u64 key;	   /* dict kinds: the interned name (a str object) */
	__s64 hash;	   /* dict kinds: its hash */
	__u64 shared_keys; /* dict kinds: the type's ht_cached_keys, 0 */
	__u64 dict_type;   /* dict kinds: &PyDict_Type (a dict's ob_type must
			    * be it), 0: not checked */
	__s64 off;	   /* SLOT: member offset; DICTPTR: tp_dictoffset;
			    * INLINE_313: tp_basicsize */
	__s32 index;	   /* dict kinds: the name's entry in shared_keys, -1 */
	__u8 kind;	   /* enum pt_pyattr_kind */
	__u8 flags;	   /* PT_PYATTR_F_* */
	__u8 vst;	   /* kind NONE: the enum pt_val_status BPF reports
			    * (pending, not readable, no such attribute) */
	__u8 pad;
};

struct pt_attr_key {
	__u64 type; /* the object's ob_type */
	__u32 fid;
	__u32 k; /* expression index in the fid's pt_val_spec */
};

/* PT_REC_ATTR: an attribute is wanted from an object of a type not in
 * attr_locs. Same size as pt_rec. */
struct pt_rec_attr {
	__u32 type; /* PT_REC_ATTR */
	__u32 fid;
	__u32 pid;
	__u32 tid;
	__u64 obj_type;
	__u64 obj; /* an instance: the key may only be found in its dict */
	__u32 k;
	__u32 pad;
	__u64 pad2;
};

/* Bounds of the read path (user/pyattr.h). */
#define PT_PYATTR_PROBE_MAX 32
#define PT_PYATTR_LOG2_MAX 30

enum pt_val_status {
	PT_VST_OK = 0,
	PT_VST_UNREAD = 1,	     /* not read in this record (the other side of the call) */
	PT_VST_FAULT = 2,	     /* the memory could not be read */
	PT_VST_TYPE = 3,	     /* not an int (or not a container, or an element not an int) */
	PT_VST_RANGE = 4,	     /* an int beyond +-2^60 */
	PT_VST_NONAME = 5,	     /* the code object has no argument or local of that name */
	PT_VST_UNSET = 6,	     /* the local has no value at entry */
	PT_VST_TRUNC = 7,	     /* a list longer than PT_VAL_MAX_ELEMS: not summed */
	PT_VST_ATTR_PENDING = 8,     /* a type not seen before: its location is being found */
	PT_VST_ATTR_MISSING = 9,     /* the object has no such attribute (unset, deleted, only
				      * on the class, or left to __getattr__) */
	PT_VST_ATTR_UNREADABLE = 10, /* the type computes it (property, __getattribute__...)
				      * or keeps it where it cannot be read */
	PT_VST_ATTR_UNDECIDED = 11,  /* the instance's dict did not tell (a key that is not
				      * the interned name, too many probes, implausible) */
	PT_VST_MAX
};

enum pt_val_kind {
	PT_VKIND_SCALAR = 1, /* v is the value */
	PT_VKIND_LIST = 2,   /* n elements: v their sum, min, max */
};

struct pt_val {
	__s64 v;	/* scalar: the value; list: the sum */
	__s64 min, max; /* list */
	__u32 n;	/* list: elements read */
	__u16 status;	/* enum pt_val_status */
	__u16 kind;	/* enum pt_val_kind, when status is PT_VST_OK */
};

struct pt_rec_vals {
	__u32 type; /* PT_REC_VALUES */
	__u32 fid;
	__u32 pid;
	__u32 tid;
	__u64 t_entry; /* of the call the values belong to */
	__u32 at_exit; /* 0: read at entry (arguments), 1: at exit (return value) */
	__u32 nelem;   /* elements in elem[] (of the one PT_VOP_ELEMS expression) */
	struct pt_val v[PT_MAX_VALS];
	/* followed by nelem __s64 elements */
};

/* Counters kept by BPF in .bss, read by user space at the end. */
struct pt_counters {
	__u64 dropped;	      /* records not written: ring buffer full */
	__u64 depth_overflow; /* calls deeper than PT_MAX_DEPTH, not timed */
	__u64 unwound;	      /* frames abandoned by longjmp/unwinding */
	__u64 orphan_returns; /* returns with no matching tracked entry */
	__u64 no_storage;     /* task storage could not be created */
	__u64 py_unreadable;  /* Python frames whose code could not be read */
	__u64 py_map_full;    /* code objects the py_codes map could not hold */
	__u64 val_dropped;    /* value records not written: ring full */
	__u64 py_unnamed;     /* frames the frame probe saw that no py: probe names */
	__u64 texit_dropped;  /* thread-exit records not written: ring full */
	/* agent clock reads not between the probe hits around them: the
	 * hit's own time was used */
	__u64 agent_clock_rejected;
};

/*
 * Python stack samples (bpf/pysample.bpf.c, a ring of their own so a flood
 * of samples never pushes out call records). A frame is the code object
 * and the position of its current instruction, raw: user space turns them
 * into names and lines (user/pyline.h says what pos means per version).
 * Only the nframes frames in use are sent, innermost first; a frame with
 * code 0 is a C-stack shim frame (3.12+) and stands for no Python code.
 */
#define PT_SAMPLE_MAX_FRAMES 128

struct pt_sample_frame {
	__u64 code;
	__s32 pos;   /* f_lasti (< 3.11), or instruction pointer - first instruction */
	__u32 flags; /* PT_SFRAME_* */
};

/* The frame is the first one a call of _PyEval_EvalFrameDefault runs
 * (3.11's is_entry): the mixed stacks' boundary between C eval calls.
 * Not set before 3.11 (every frame is one) nor on 3.12+ (shim frames,
 * code 0, mark the boundary). */
#define PT_SFRAME_ENTRY 0x1

struct pt_sample {
	__u32 type; /* PT_REC_SAMPLE or PT_REC_OFFCPU */
	__u32 nframes;
	__u32 pid;
	__u32 tid;
	__u64 t;      /* CLOCK_MONOTONIC ns: the sample, or the end of the interval */
	__u64 weight; /* ns: periods x the sampling period, or the interval's length */
	__u32 flags;  /* PT_SAMPLEF_* */
	/* on-CPU: the periods this sample stands for (bpf/sampleclock.h):
	 * the first was run on the CPU, the others the timer missed (steal)
	 * and count off the CPU; 0: none (or an off-CPU interval) */
	__u32 periods;
	struct pt_sample_frame f[PT_SAMPLE_MAX_FRAMES];
};

#define PT_SAMPLE_HDR_SIZE 40 /* offsetof(struct pt_sample, f) */

#define PT_SAMPLEF_NOT_PYTHON 0x1 /* the thread has no Python thread state */
#define PT_SAMPLEF_TRUNCATED 0x2  /* deeper than PT_SAMPLE_MAX_FRAMES: outer frames cut */
#define PT_SAMPLEF_UNREADABLE 0x4 /* the walk stopped at a frame it could not read */
#define PT_SAMPLEF_NO_STACK 0x8	  /* off-CPU since before attach: stack unknown */
#define PT_SAMPLEF_NATIVE 0x10	  /* its PT_REC_USTACK (same tid and t) came just before */
/* native frames on, a thread without Python: this sample stands for
 * `periods` on-CPU samples of its thread (the ones before it were not
 * sent, their weight is in this one's), all on the CPU; its native stack
 * is one per PT_POOL_EVERY samples (pysample.bpf.c, pool_sample) */
#define PT_SAMPLEF_POOLED 0x20
/* off-CPU, with PT_SAMPLEF_NO_STACK: the thread was taken for one
 * without Python when it went off the CPU (its thread state not found:
 * its first instants, or a search that met the list while another thread
 * was being added or removed), so its stack was not read; a look after
 * the interval found its thread state (pysample.bpf.c, settle_held) */
#define PT_SAMPLEF_RECHECKED 0x40
#define PT_POOL_EVERY 10

/*
 * Native stacks (`set native_frames on`): at an on-CPU sample, the
 * thread's user registers and the top of its user stack, copied as they
 * are, in a record of their own sent just before the sample's (same tid,
 * same t; a thread cannot run between the two). User space unwinds the
 * copy with the process's .eh_frame (sample/unwind.h): distro builds have
 * no frame pointers, and BPF cannot walk CFI cheaply.
 */
#define PT_USTACK_MAX 16384 /* bytes of stack copied from sp up, at most */

enum pt_ureg {
	PT_UREG_IP,
	PT_UREG_SP,
	PT_UREG_BP,
	PT_UREG_BX,
	PT_UREG_R12,
	PT_UREG_R13,
	PT_UREG_R14,
	PT_UREG_R15,
	PT_UREG_AX,
	PT_UREG_CX,
	PT_UREG_DX,
	PT_UREG_SI,
	PT_UREG_DI,
	PT_UREG_R8,
	PT_UREG_R9,
	PT_UREG_R10,
	PT_UREG_R11,
	PT_UREGS
};

struct pt_ustack {
	__u32 type; /* PT_REC_USTACK */
	__u32 len;  /* bytes of data: the stack from regs[PT_UREG_SP] up */
	__u32 pid;
	__u32 tid;
	__u64 t; /* the sample's t; an off-CPU interval's start (t - weight) */
	__u64 regs[PT_UREGS];
	__u8 data[PT_USTACK_MAX];
};

#define PT_USTACK_HDR_SIZE 160 /* offsetof(struct pt_ustack, data) */

/* Per-thread state of the sampler (task storage; user space reads it at
 * the end to close intervals of threads still off the CPU). */
struct pt_sample_thread {
	__u64 tstate;	  /* cached PyThreadState *, 0: none found */
	__u64 checked_ns; /* when "none" was decided */
	__u64 t_out;	  /* went off the CPU at, 0: on the CPU or not known */
	__u64 t_in;	  /* came on the CPU at, 0: not seen since made */
	__u64 grid;	  /* its last on-CPU sample's grid point (sampleclock.h) */
	/* native frames off the CPU (pysample.bpf.c, pt_sys_exit): its user
	 * ip and sp when it went off the CPU; its credit of time off the CPU
	 * for native stacks (want_native); pending: 1 when pend is a closed
	 * interval that waits for its native stack, taken where the thread
	 * leaves its system call, 2 while it is being sent */
	__u64 out_ip, out_sp;
	__u64 ucredit_ns;
	__u64 pending;
	__u64 native_out; /* preempted: its native stack sent at switch-out */
	/* native frames on, a thread without Python: on-CPU samples not sent
	 * yet and their weight, for its next PT_SAMPLEF_POOLED sample */
	__u64 pool_n, pool_ns;
	/* taken for a thread without Python at a switch-out: when (np_out);
	 * such intervals closed since, held until a look at its thread state
	 * made after them says which it is (settle_held): their total, the
	 * last one's end, how many; np_since: its first look without a
	 * thread state since the last with one */
	__u64 np_out, np_since;
	__u64 held_ns, held_t, held_n;
	struct pt_sample s; /* the stack it went off the CPU with */
	struct pt_sample pend;
};

/* A sampled process (the sampler's tgids map): &_PyRuntime in it, and
 * when its sampling began (threads asleep since before are off the CPU
 * from then on, with no known stack). */
struct pt_sample_proc {
	__u64 runtime;
	__u64 attach_ns;
	struct pt_py_offsets py;
};

/* The sampler's counters (.bss of pysample.bpf.c). */
struct pt_sample_counters {
	__u64 samples;	    /* on-CPU samples taken */
	__u64 offcpu;	    /* off-CPU intervals closed */
	__u64 lost;	    /* records not written: ring full */
	__u64 no_storage;   /* thread storage could not be created: not sampled */
	__u64 tstate_walks; /* thread-state list searches (cache misses) */
	/* thread states that could not be read (a page not mapped at that
	 * moment): the sample or interval is kept, its stack unknown
	 * (PT_SAMPLEF_UNREADABLE) */
	__u64 tstate_unreadable;
	/* intervals off the CPU of threads without a Python thread state:
	 * not counted (idle native workers); those of a thread taken for one
	 * at switch-out and found with a thread state by a later look: kept,
	 * stack unknown (PT_SAMPLEF_RECHECKED) */
	__u64 offcpu_not_python;
	__u64 offcpu_found_late;
	/* native stacks sent (PT_REC_USTACK) and their bytes in all; those
	 * not written (ring full: their samples go without) */
	__u64 ustacks;
	__u64 ustack_bytes;
	__u64 ustack_lost;
	/* off-CPU intervals given a native stack (also in ustacks); left
	 * with their Python frames only: by the budget (shorter than a
	 * period, the thread's off-CPU credit spent), or because the thread
	 * came back other than through the system call it blocked in
	 * (preempted in user code, a page fault) */
	__u64 offcpu_native;
	__u64 offcpu_budget;
	__u64 offcpu_moved;
	/* native frames on: samples of threads without Python folded into a
	 * later PT_SAMPLEF_POOLED one of their thread (not lost) */
	__u64 pooled;
	/* native frames off the CPU through task works (pysample.bpf.c,
	 * tw_cb): works run; those that found their CPU's buffer in use, and
	 * works the kernel would not queue (left to finish_pending) */
	__u64 tw_runs, tw_busy, tw_failed;
	/* a thread went off the CPU with its last interval still open (the
	 * switch in between not seen, pysample.bpf.c, close_unseen): closed
	 * where the scheduler says the thread was put on the CPU again, or
	 * lost where it cannot say */
	__u64 offcpu_unseen_in, offcpu_unclosed;
};

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct pt_sample_frame) == 16, "pt_sample_frame is part of the ABI");
_Static_assert(sizeof(struct pt_sample) ==
		       PT_SAMPLE_HDR_SIZE + PT_SAMPLE_MAX_FRAMES * sizeof(struct pt_sample_frame),
	       "pt_sample is part of the ABI");
_Static_assert(sizeof(struct pt_ustack) == PT_USTACK_HDR_SIZE + PT_USTACK_MAX,
	       "pt_ustack is part of the ABI");
_Static_assert(sizeof(struct pt_sample_counters) == 160, "pt_sample_counters is part of the ABI");
_Static_assert(sizeof(struct pt_py_offsets) == 160, "pt_py_offsets is part of the ABI");
_Static_assert(sizeof(struct pt_bpf_proc) == 168, "pt_bpf_proc is part of the ABI");
_Static_assert(sizeof(struct pt_rec) == 48, "pt_rec is part of the ABI");
_Static_assert(PT_MAX_DEPTH <= 0xffff, "pt_rec.depth is 16 bits");
_Static_assert(sizeof(struct pt_rec_pycode) == sizeof(struct pt_rec), "one record size");
_Static_assert(sizeof(struct pt_counters) == 88, "pt_counters is part of the ABI");
_Static_assert(sizeof(struct pt_py_code) == 32, "pt_py_code is part of the ABI");
_Static_assert(sizeof(struct pt_py_key) == 16, "pt_py_key is part of the ABI");
_Static_assert(PT_FID_MAKE(PT_MAX_PROCS - 1, PT_FID_LOCAL_MASK) < PT_FID_PY_PENDING,
	       "process fids stay below the Python markers");
_Static_assert(sizeof(struct pt_val) == 32, "pt_val is part of the ABI");
_Static_assert(sizeof(struct pt_rec_vals) == 128, "pt_rec_vals is part of the ABI");
_Static_assert(sizeof(struct pt_val_spec) == 32, "pt_val_spec is part of the ABI");
_Static_assert(sizeof(struct pt_pyattr_loc) == 56, "a BPF map value: no implicit padding");
_Static_assert(sizeof(struct pt_attr_key) == 16, "pt_attr_key is part of the ABI");
_Static_assert(sizeof(struct pt_rec_attr) == sizeof(struct pt_rec), "one record size");
#endif

#endif /* PT_ABI_H */
