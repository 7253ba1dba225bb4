/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * migr's methods in rdma_rxe (the migr-rxe-dkms module): a rebuilt object
 * asks for the number it had, so that after a switch or a migration the
 * numbers an application knows are the device's again. Driver-namespace
 * ids of the uverbs ioctl framework; the module's ABI version below.
 * See migr_rxe(7).
 */
#ifndef MIGR_RXE_ABI_USER_H
#define MIGR_RXE_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/*
 * The ABI version changes only when an id or attribute already published
 * changes meaning or layout. Adding a method or a caps flag does not: an
 * older caller never names them, and a newer one tests the flag first (on
 * a module without the method the call fails, as for any unknown method,
 * with EPROTONOSUPPORT).
 */
#define MIGR_RXE_ABI 1

/* A global object: its methods act on the calling file's context */
enum migr_rxe_objects {
	MIGR_RXE_OBJECT_MIGR = (1U << UVERBS_ID_NS_SHIFT),
};

enum migr_rxe_methods {
	/* what the module offers, and the ranges of each kind of number */
	MIGR_RXE_METHOD_QUERY_CAPS = (1U << UVERBS_ID_NS_SHIFT),
	/*
	 * The next object of a kind created on this context takes exactly
	 * the value, or its create fails (EBUSY: in use; ERANGE: outside the
	 * kind's range); one value per kind, consumed by that create either
	 * way, replaced by a later call; 0 takes it back
	 */
	MIGR_RXE_METHOD_SET_NEXT,
	/*
	 * Re-point a drained RC QP in RTS to another peer in place: new
	 * destination GID, QP number and PSNs, the QP's own number, queues
	 * and posted receives kept (migr_rxe(7)). EBUSY while anything is in
	 * flight or queued, EINVAL if not an RC QP in RTS; never a half change
	 */
	MIGR_RXE_METHOD_QP_REPOINT,
	/*
	 * Hold numbers of a kind for this context (a destination before a
	 * restore): no other create takes them, a create here takes one when
	 * SET_NEXT names it. Numbers in use are skipped; each held one counts
	 * as an object of its kind against the device's limit, and against
	 * the bounds of MIGR_RXE_HOLD_MAX below. Held until taken, given back
	 * by UNRESERVE, or at the context's end (its fd's close)
	 */
	MIGR_RXE_METHOD_RESERVE,
	MIGR_RXE_METHOD_UNRESERVE,
	/*
	 * Take over numbers that another context of this device holds under
	 * a token (RESERVE's TOKEN): a destination's migrd holds the numbers
	 * of a process during its pre-copy, and the restored process, which
	 * opens a context of its own, presents the token migrd gave it.
	 * Values not held under that token are passed by
	 */
	MIGR_RXE_METHOD_CLAIM,
};

enum migr_rxe_kind {
	MIGR_RXE_KIND_QPN = 1, /* a QP's number */
	MIGR_RXE_KIND_MR_KEY, /* a user MR's lkey (= rkey): index << 8 | key */
	MIGR_RXE_KIND_MW_KEY, /* a memory window's rkey */
	MIGR_RXE_KIND_MAX = MIGR_RXE_KIND_MW_KEY,
};

enum migr_rxe_caps_flags {
	MIGR_RXE_CAP_SET_NEXT = 1 << 0,
	MIGR_RXE_CAP_QP_REPOINT = 1 << 1,
	MIGR_RXE_CAP_RESERVE = 1 << 2,
	MIGR_RXE_CAP_CLAIM = 1 << 3, /* and RESERVE's TOKEN */
	MIGR_RXE_CAP_HOLD_BOUND = 1 << 4, /* the bounds below enforced */
};

/* at most this many values in one RESERVE or UNRESERVE call */
#define MIGR_RXE_RESERVE_MAX 4096

/*
 * Bounds on held numbers, all kinds together. A context holds at most
 * MIGR_RXE_HOLD_MAX of them when RESERVE's caller has CAP_NET_ADMIN over
 * the device's network namespace (a migration's hold: migrd's), else
 * MIGR_RXE_HOLD_MAX_UNPRIV; what such unprivileged calls hold on one
 * device, every context's together, is at most
 * MIGR_RXE_HOLD_MAX_DEV_UNPRIV, far below any pool's size. A RESERVE
 * that would go beyond fails, holding none of its values: EDQUOT (the
 * context's bound) or ENOSPC (the device's). Numbers a CLAIM takes are
 * counted to the claimer from then on, whatever its bound.
 */
#define MIGR_RXE_HOLD_MAX 16384
#define MIGR_RXE_HOLD_MAX_UNPRIV 64
#define MIGR_RXE_HOLD_MAX_DEV_UNPRIV 1024

/* ranges[2 * (kind - 1)] and [+ 1]: the lowest and highest value of kind */
#define MIGR_RXE_RANGES (2 * MIGR_RXE_KIND_MAX)

enum migr_rxe_query_caps_attrs {
	MIGR_RXE_ATTR_CAPS_ABI = (1U << UVERBS_ID_NS_SHIFT), /* out u32 */
	MIGR_RXE_ATTR_CAPS_FLAGS, /* out u64: migr_rxe_caps_flags */
	MIGR_RXE_ATTR_CAPS_RANGES, /* out u32[MIGR_RXE_RANGES] */
};

enum migr_rxe_set_next_attrs {
	MIGR_RXE_ATTR_NEXT_KIND = (1U << UVERBS_ID_NS_SHIFT), /* const: kind */
	MIGR_RXE_ATTR_NEXT_VALUE, /* in u32 */
};

enum migr_rxe_qp_repoint_attrs {
	MIGR_RXE_ATTR_REPOINT_QP = (1U << UVERBS_ID_NS_SHIFT), /* idr: the QP */
	MIGR_RXE_ATTR_REPOINT_DGID, /* in u8[16]: the peer's GID */
	MIGR_RXE_ATTR_REPOINT_DEST_QPN, /* in u32: the peer's QPN, 24 bits */
	MIGR_RXE_ATTR_REPOINT_SQ_PSN, /* in u32: first PSN sent, 24 bits */
	MIGR_RXE_ATTR_REPOINT_RQ_PSN, /* in u32: first PSN expected, 24 bits */
};

enum migr_rxe_reserve_attrs {
	MIGR_RXE_ATTR_RESERVE_KIND = (1U << UVERBS_ID_NS_SHIFT), /* const: kind */
	MIGR_RXE_ATTR_RESERVE_VALUES, /* in u32[1..MIGR_RXE_RESERVE_MAX] */
	/* out u32 (RESERVE, CLAIM): how many of the values it now holds */
	MIGR_RXE_ATTR_RESERVE_HELD,
	/*
	 * in u64, not 0. RESERVE (optional): the token this context holds
	 * its numbers under, one for the context's life (another one is
	 * refused); CLAIM (mandatory): the token presented
	 */
	MIGR_RXE_ATTR_RESERVE_TOKEN,
};

#endif /* MIGR_RXE_ABI_USER_H */
