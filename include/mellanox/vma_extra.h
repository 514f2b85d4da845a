/* Slipstream: the VMA Extra API, <mellanox/vma_extra.h>.
 *
 * Binary-compatible with libvma's header of the same name at its HEAD
 * layout (libvma >= 9.8.70, x86-64/LP64): same names, values, sizes and
 * offsets, written from libvma's documented layout, not from upstream's
 * text.  See vma_extra(7) and vma_get_api(3).
 *
 * Include rules, kept on purpose:
 *  - Includes are libvma's own (<stddef.h>, <stdint.h>, <netinet/in.h>),
 *    <sys/types.h> (pthread_t; <netinet/in.h> pulls it in anyway) and
 *    <time.h> (struct timespec), which declare none of the socket calls.
 *    Programs such as sockperf #define socket(), readv(), getsockopt() and
 *    friends as function-like macros after their system headers and
 *    include this file afterwards: a header declaring those calls for the
 *    first time here (<sys/uio.h>, <sys/ioctl.h>, <sched.h>, ...) would
 *    break them.
 *  - Nothing here is a macro test on, or a definition of, RING_LOGIC_* or
 *    ring_logic_t: sockperf renames them (to VMA_RING_LOGIC_*,
 *    vma_ring_logic_t) around the #include so that xlio_extra.h can define
 *    its own.
 *  - No function is exported: vma_get_api() is static inline and asks the
 *    loaded library through getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API).
 *  - The GNU extensions the ABI needs (packed structs, flexible arrays in
 *    packed records, an empty struct, 64-bit enumerators, anonymous
 *    unions) are marked __extension__ so that -pedantic stays quiet in
 *    C99, C11 and C++11 and later.
 */
#ifndef SLIPSTREAM_MELLANOX_VMA_EXTRA_H
#define SLIPSTREAM_MELLANOX_VMA_EXTRA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <netinet/in.h>
/* Strict ISO C without a POSIX feature macro: <sys/types.h> gave no
 * pthread_t and <time.h> no struct timespec.  <pthread.h> has both, and in
 * that mode (no _GNU_SOURCE) declares none of the calls programs redirect. */
#if !defined(_POSIX_C_SOURCE)
#include <pthread.h>
#endif

/* No extern "C" block: nothing here has linkage (types, macros and one
 * static inline function), and clang warns on the empty struct inside
 * one. */

/* ---- Flags and socket option names ------------------------------------ */

/* recvfrom_zcopy in-flag: never fall back to copying. */
#define MSG_VMA_ZCOPY_FORCE 0x01000000
/* recvfrom_zcopy out-flag: the buffer holds a vma_packets_t. */
#define MSG_VMA_ZCOPY 0x00040000

/* getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API): the struct vma_api_t *. */
#define SO_VMA_GET_API 2800
/* A per-socket void * (default: the fd); optlen == sizeof(void *). */
#define SO_VMA_USER_DATA 2801
/* setsockopt with struct vma_ring_alloc_logic_attr (exact size). */
#define SO_VMA_RING_ALLOC_LOGIC 2810
/* setsockopt with a struct iovec: user memory for the receive ring. */
#define SO_VMA_RING_USER_MEMORY 2811
/* uint32_t flow tag on the socket's steering rule. */
#define SO_VMA_FLOW_TAG 2820
/* setsockopt: detach the socket from its receive rings (value ignored). */
#define SO_VMA_SHUTDOWN_RX 2821

/* cmsg_type (cmsg_level SOL_SOCKET) handled by the ioctl() entry. */
#define CMSG_VMA_IOCTL_USER_ALLOC 2900
#define VMA_IOCTL_USER_ALLOC_FLAG_TX (1 << 0)
#define VMA_IOCTL_USER_ALLOC_FLAG_RX (1 << 1)

/* send flag: warm the send path, put nothing on the wire. */
#define VMA_SND_FLAGS_DUMMY MSG_SYN

/* The kernel's name; get/set with struct vma_rate_limit_t. */
#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

/* ---- Enumerations ------------------------------------------------------- */

/* What a receive callback tells the library to do with the packet. */
typedef enum {
	VMA_PACKET_DROP = 0, /* recycle the buffer */
	VMA_PACKET_RECV = 1, /* queue it for the next receive call */
	VMA_PACKET_HOLD = 2  /* the caller keeps packet_id; free_packets() later */
} vma_recv_callback_retval_t;

/* Bits of vma_completion_t.events beyond the EPOLL* ones (8 bytes wide). */
__extension__ typedef enum {
	VMA_SOCKETXTREME_PACKET = (1ULL << 32),
	VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED = (1ULL << 33)
} vma_socketxtreme_events_t;

/* Ring allocation logic (SO_VMA_RING_ALLOC_LOGIC, VMA_RING_ALLOCATION_*). */
typedef enum {
	RING_LOGIC_PER_INTERFACE = 0,
	RING_LOGIC_PER_IP = 1,
	RING_LOGIC_PER_SOCKET = 10,
	RING_LOGIC_PER_USER_ID = 11,
	RING_LOGIC_PER_THREAD = 20,
	RING_LOGIC_PER_CORE = 30,
	RING_LOGIC_PER_CORE_ATTACH_THREADS = 31,
	RING_LOGIC_LAST = 32
} ring_logic_t;

/* vma_ring_alloc_logic_attr.comp_mask: at least one must be set. */
typedef enum {
	VMA_RING_ALLOC_MASK_RING_PROFILE_KEY = (1 << 0),
	VMA_RING_ALLOC_MASK_RING_USER_ID = (1 << 1),
	VMA_RING_ALLOC_MASK_RING_INGRESS = (1 << 2),
	VMA_RING_ALLOC_MASK_RING_ENGRESS = (1 << 3) /* sic */
} vma_ring_alloc_logic_attr_comp_mask;

/* vma_modify_ring_attr.comp_bit_mask. */
typedef enum {
	VMA_MODIFY_RING_CQ_MODERATION = (1 << 0),
	VMA_MODIFY_RING_CQ_ARM = (1 << 1)
} vma_modify_ring_mask;

/* vma_ring_type_attr.comp_mask (no bits defined). */
typedef enum {
	VMA_RING_ATTR_LAST = 0
} vma_ring_type_attr_mask;

typedef enum {
	VMA_RING_PACKET = 0,
	VMA_RING_EXTERNAL_MEM = 1
} vma_ring_type;

/* dev_data.device_cap. */
typedef enum {
	VMA_HW_PP_EN = (1 << 0),
	VMA_HW_PP_BURST_EN = (1 << 3)
} mlx_hw_device_cap;

/* vma_mlx_hw_device_data.valid_mask. */
typedef enum {
	DATA_VALID_DEV = 0,
	DATA_VALID_SQ = 1,
	DATA_VALID_RQ = 2
} vma_mlx_hw_valid_data_mask;

/* vma_api_t.vma_extra_supported_mask: one bit per entry the library
 * provides.  Bits 15 and 19 are unused; bit 21 meant GET_DPCP_DEVICES in
 * libvma 9.0-9.8.31. */
typedef enum {
	VMA_EXTRA_API_REGISTER_RECV_CALLBACK = (1 << 0),
	VMA_EXTRA_API_RECVFROM_ZCOPY = (1 << 1),
	VMA_EXTRA_API_FREE_PACKETS = (1 << 2),
	VMA_EXTRA_API_ADD_CONF_RULE = (1 << 3),
	VMA_EXTRA_API_THREAD_OFFLOAD = (1 << 4),
	VMA_EXTRA_API_DUMP_FD_STATS = (1 << 5),
	VMA_EXTRA_API_SOCKETXTREME_POLL = (1 << 6),
	VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_PACKETS = (1 << 7),
	VMA_EXTRA_API_SOCKETXTREME_REF_VMA_BUFF = (1 << 8),
	VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_BUFF = (1 << 9),
	VMA_EXTRA_API_GET_SOCKET_RINGS_NUM = (1 << 10),
	VMA_EXTRA_API_GET_SOCKET_RINGS_FDS = (1 << 11),
	VMA_EXTRA_API_GET_SOCKET_TX_RING_FD = (1 << 12),
	VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER = (1 << 13),
	VMA_EXTRA_API_GET_RING_DIRECT_DESCRIPTORS = (1 << 14),
	VMA_EXTRA_API_ADD_RING_PROFILE = (1 << 16),
	VMA_EXTRA_API_REGISTER_MEMORY_ON_RING = (1 << 17),
	VMA_EXTRA_API_DEREGISTER_MEMORY_ON_RING = (1 << 18),
	VMA_EXTRA_API_MODIFY_RING = (1 << 20),
	VMA_EXTRA_API_IOCTL = (1 << 21)
} vma_extra_api_mask;

/* ---- socketXtreme ------------------------------------------------------- */

/* One buffer of a received packet; a chain through next (NULL ends it).
 * The library owns it: only pointers it handed out may be passed back. */
typedef struct vma_buff_t {
	struct vma_buff_t *next;
	void *payload;
	uint16_t len;
} vma_buff_t;

typedef struct vma_packet_desc_t {
	size_t num_bufs;
	uint16_t total_len;
	struct vma_buff_t *buff_lst;
	struct timespec hw_timestamp;
} vma_packet_desc_t;

/* One event from socketxtreme_poll().  packet is valid with
 * VMA_SOCKETXTREME_PACKET; src (network order) with that and with
 * VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED, which also sets listen_fd
 * (user_data then names the accepted socket). */
typedef struct vma_completion_t {
	struct vma_packet_desc_t packet;
	uint64_t events;
	uint64_t user_data;
	struct sockaddr_in src;
	int listen_fd;
} vma_completion_t;

/* ---- Zero-copy receive and receive callbacks ---------------------------- */

/* One packet of a recvfrom_zcopy() buffer.  Records vary in length:
 * the next one starts 16 + 16 * sz_iov bytes further on. */
__extension__ typedef struct vma_packet_t {
	void *packet_id;
	size_t sz_iov;
	struct iovec iov[];
} __attribute__((packed)) vma_packet_t;

/* What recvfrom_zcopy() writes to the caller's buffer with MSG_VMA_ZCOPY. */
__extension__ typedef struct vma_packets_t {
	size_t n_packet_num;
	struct vma_packet_t pkts[];
} __attribute__((packed)) vma_packets_t;

/* Passed to a receive callback; valid only during the call.  The library
 * sets struct_sz to its sizeof(vma_info_t). */
typedef struct vma_info_t {
	size_t struct_sz;
	void *packet_id;
	struct sockaddr_in *src;
	struct sockaddr_in *dst;
	size_t payload_sz;
	uint32_t socket_ready_queue_pkt_count;
	uint32_t socket_ready_queue_byte_count;
	struct timespec hw_timestamp;
	struct timespec sw_timestamp;
} __attribute__((packed)) vma_info_t;

typedef vma_recv_callback_retval_t (*vma_recv_callback_t)(int fd, size_t sz_iov,
							   struct iovec iov[],
							   struct vma_info_t *vma_info,
							   void *context);

/* ---- Rings ------------------------------------------------------------- */

/* SO_MAX_PACING_RATE's value. */
typedef struct vma_rate_limit_t {
	uint32_t rate;         /* Kbit/s */
	uint32_t max_burst_sz; /* bytes */
	uint16_t typical_pkt_sz;
} vma_rate_limit_t;

/* SO_VMA_RING_ALLOC_LOGIC's value.  The bit-fields share one 32-bit word
 * (unsigned int is uint32_t on every Linux ABI; ISO C allows only it). */
struct vma_ring_alloc_logic_attr {
	uint32_t comp_mask;
	ring_logic_t ring_alloc_logic;
	uint32_t ring_profile_key;
	uint32_t user_id;
	unsigned int ingress : 1;
	unsigned int engress : 1; /* sic */
	unsigned int reserved : 30;
};

struct vma_cq_moderation_attr {
	uint32_t cq_moderation_count;
	uint32_t cq_moderation_period_usec;
};

/* Empty: size 0 in C (a GNU extension), 1 in C++; the union holding it is
 * 8 bytes either way. */
__extension__ struct vma_cq_arm_attr {
};

struct vma_modify_ring_attr {
	uint32_t comp_bit_mask;
	int ring_fd;
	__extension__ union {
		struct vma_cq_moderation_attr cq_moderation;
		struct vma_cq_arm_attr cq_arm;
	};
};

struct vma_packet_queue_ring_attr {
	uint32_t comp_mask;
};

struct vma_external_mem_attr {
	uint32_t comp_mask;
};

struct vma_ring_type_attr {
	uint32_t comp_mask;
	vma_ring_type ring_type;
	__extension__ union {
		struct vma_packet_queue_ring_attr ring_pktq;
		struct vma_external_mem_attr ring_ext;
	};
};

/* The ioctl() entry's CMSG_VMA_IOCTL_USER_ALLOC payload. */
typedef struct vma_cmsg_ioctl_user_alloc_t {
	uint8_t flags; /* VMA_IOCTL_USER_ALLOC_FLAG_* */
	void *(*memalloc)(size_t);
	void (*memfree)(void *);
} __attribute__((packed)) vma_cmsg_ioctl_user_alloc_t;

/* ---- Hardware descriptors (get_ring_direct_descriptors; mlx5 only) ----- */

struct dev_data {
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t device_cap; /* mlx_hw_device_cap */
};

struct hw_cq_data {
	void *buf;
	volatile uint32_t *dbrec;
	uint32_t cq_size;
	uint32_t cqe_size;
	uint32_t cqn;
	void *uar;
	uint32_t *cons_idx;
};

struct hw_wq_data {
	void *buf;
	uint32_t wqe_cnt;
	uint32_t stride;
	volatile uint32_t *dbrec;
	struct hw_cq_data cq_data;
};

struct hw_rq_data {
	struct hw_wq_data wq_data;
	uint32_t *head;
	uint32_t *tail;
};

struct hw_sq_data {
	struct hw_wq_data wq_data;
	uint32_t sq_num;
	struct {
		void *reg;
		uint32_t size;
		uint32_t offset;
	} bf;
};

struct vma_mlx_hw_device_data {
	uint32_t valid_mask; /* vma_mlx_hw_valid_data_mask bits */
	struct dev_data dev_data;
	struct hw_sq_data sq_data;
	struct hw_rq_data rq_data;
};

/* ---- The table ---------------------------------------------------------- */

/* What getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API) hands out: one table per
 * process, always the same.  An entry is usable only if its bit is set in
 * vma_extra_supported_mask; the slots past dump_fd_stats moved between
 * libvma releases.  Every entry returns -1 with errno set on failure. */
struct __attribute__((packed)) vma_api_t {
	int (*register_recv_callback)(int s, vma_recv_callback_t callback, void *context);
	int (*recvfrom_zcopy)(int s, void *buf, size_t len, int *flags, struct sockaddr *from,
			      socklen_t *fromlen);
	int (*free_packets)(int s, struct vma_packet_t *pkts, size_t count);
	int (*add_conf_rule)(const char *config_line);
	int (*thread_offload)(int offload, pthread_t tid);
	int (*socketxtreme_poll)(int fd, struct vma_completion_t *completions,
				 unsigned int ncompletions, int flags);
	int (*get_socket_rings_num)(int fd);
	int (*get_socket_rings_fds)(int fd, int *ring_fds, int ring_fds_sz);
	int (*get_socket_tx_ring_fd)(int sock_fd, struct sockaddr *to, socklen_t tolen);
	int (*socketxtreme_free_vma_packets)(struct vma_packet_desc_t *packets, int num);
	int (*socketxtreme_ref_vma_buff)(struct vma_buff_t *buff);
	int (*socketxtreme_free_vma_buff)(struct vma_buff_t *buff);
	int (*dump_fd_stats)(int fd, int log_level);
	int (*vma_add_ring_profile)(struct vma_ring_type_attr *profile, int *key);
	int (*get_socket_network_header)(int fd, void *ptr, uint16_t *len);
	int (*get_ring_direct_descriptors)(int fd, struct vma_mlx_hw_device_data *data);
	int (*register_memory_on_ring)(int fd, void *addr, size_t length, uint32_t *key);
	int (*deregister_memory_on_ring)(int fd, void *addr, size_t length);
	int (*vma_modify_ring)(struct vma_modify_ring_attr *mr_data);
	uint64_t vma_extra_supported_mask; /* vma_extra_api_mask bits */
	int (*ioctl)(void *cmsg_hdr, size_t cmsg_len);
};
typedef struct vma_api_t vma_api_t;

/* The table of the library loaded in this process (LD_PRELOAD), or NULL
 * when none answers (the kernel refuses fd -1 with EBADF).  A program that
 * dlopen()s the library makes the same getsockopt call through the
 * library's getsockopt.  The call stays a plain getsockopt(...) so that a
 * program redirecting getsockopt by macro redirects this one too. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define SLIPSTREAM_VMA_EXTRA_NULL nullptr /* quiet under -Wzero-as-null-pointer-constant */
#else
#define SLIPSTREAM_VMA_EXTRA_NULL NULL
#endif
static inline struct vma_api_t *vma_get_api(void)
{
	struct vma_api_t *api = SLIPSTREAM_VMA_EXTRA_NULL;
	socklen_t len = sizeof(api);

	if (getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API, &api, &len) < 0)
		return SLIPSTREAM_VMA_EXTRA_NULL;
	return api;
}
#undef SLIPSTREAM_VMA_EXTRA_NULL

#endif /* SLIPSTREAM_MELLANOX_VMA_EXTRA_H */
