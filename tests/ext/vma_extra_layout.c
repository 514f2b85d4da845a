/* Layout of the installed <mellanox/vma_extra.h> against libvma's
 * numbers (its header at the HEAD layout, x86-64): every
 * struct's size, every field's offset and size, packing, every constant.
 * Each number is checked twice: at compile time (a static assertion: a
 * deviating header does not build) and at run time (printed, so a run
 * shows what was compared).  Every vma_api_t slot and the receive callback
 * type also get a function of the reference's signature assigned, which
 * -Werror (C) or the language (C++) refuses on a mismatch.
 *
 * Built by tests/ext/vma_extra_header.sh as C99, C11 and C++11/17/20 with
 * only the installed include directory on the path. */
#include <mellanox/vma_extra.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#if defined(__cplusplus)
#define STATIC_CHECK(cond, text) static_assert(cond, text)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define STATIC_CHECK(cond, text) _Static_assert(cond, text)
#else
#define STATIC_CHECK_NAME2(line) static_check_##line
#define STATIC_CHECK_NAME(line) STATIC_CHECK_NAME2(line)
#define STATIC_CHECK(cond, text) \
	typedef char STATIC_CHECK_NAME(__LINE__)[(cond) ? 1 : -1] __attribute__((unused))
#endif

static int failures;
static int checks;

static void report(const char *what, unsigned long long got, unsigned long long want)
{
	checks++;
	if (got == want) {
		printf("ok   %-60s = %llu\n", what, got);
	} else {
		printf("FAIL %-60s = %llu, want %llu\n", what, got, want);
		failures++;
	}
}

#define EXPECT(expr, want)                                                        \
	do {                                                                      \
		STATIC_CHECK((unsigned long long)(expr) == (unsigned long long)(want), \
			     #expr " == " #want);                                 \
		report(#expr, (unsigned long long)(expr), (unsigned long long)(want)); \
	} while (0)

/* Offset and size of one field. */
#define FIELD(type, field, off, size)                          \
	do {                                                   \
		EXPECT(offsetof(type, field), off);            \
		EXPECT(sizeof(((type *)0)->field), size);      \
	} while (0)

/* Packed structs have alignment 1 (__alignof__: GCC and clang, any
 * language mode, and usable on types with flexible arrays). */
#define ALIGNMENT(type, align) EXPECT(__alignof__(type), align)

static void constants(void)
{
	EXPECT(MSG_VMA_ZCOPY_FORCE, 0x01000000);
	EXPECT(MSG_VMA_ZCOPY, 0x00040000);
	EXPECT(SO_VMA_GET_API, 2800);
	EXPECT(SO_VMA_USER_DATA, 2801);
	EXPECT(SO_VMA_RING_ALLOC_LOGIC, 2810);
	EXPECT(SO_VMA_RING_USER_MEMORY, 2811);
	EXPECT(SO_VMA_FLOW_TAG, 2820);
	EXPECT(SO_VMA_SHUTDOWN_RX, 2821);
	EXPECT(CMSG_VMA_IOCTL_USER_ALLOC, 2900);
	EXPECT(VMA_IOCTL_USER_ALLOC_FLAG_TX, 1);
	EXPECT(VMA_IOCTL_USER_ALLOC_FLAG_RX, 2);
	EXPECT(VMA_SND_FLAGS_DUMMY, 0x400);
	EXPECT(VMA_SND_FLAGS_DUMMY, MSG_SYN);
	EXPECT(SO_MAX_PACING_RATE, 47);

	EXPECT(VMA_PACKET_DROP, 0);
	EXPECT(VMA_PACKET_RECV, 1);
	EXPECT(VMA_PACKET_HOLD, 2);
	EXPECT(VMA_SOCKETXTREME_PACKET, 1ULL << 32);
	EXPECT(VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED, 1ULL << 33);
	EXPECT(sizeof(vma_socketxtreme_events_t), 8);

	EXPECT(RING_LOGIC_PER_INTERFACE, 0);
	EXPECT(RING_LOGIC_PER_IP, 1);
	EXPECT(RING_LOGIC_PER_SOCKET, 10);
	EXPECT(RING_LOGIC_PER_USER_ID, 11);
	EXPECT(RING_LOGIC_PER_THREAD, 20);
	EXPECT(RING_LOGIC_PER_CORE, 30);
	EXPECT(RING_LOGIC_PER_CORE_ATTACH_THREADS, 31);
	EXPECT(RING_LOGIC_LAST, 32);
	EXPECT(sizeof(ring_logic_t), 4);

	EXPECT(VMA_RING_ALLOC_MASK_RING_PROFILE_KEY, 1 << 0);
	EXPECT(VMA_RING_ALLOC_MASK_RING_USER_ID, 1 << 1);
	EXPECT(VMA_RING_ALLOC_MASK_RING_INGRESS, 1 << 2);
	EXPECT(VMA_RING_ALLOC_MASK_RING_ENGRESS, 1 << 3);
	EXPECT(VMA_MODIFY_RING_CQ_MODERATION, 1 << 0);
	EXPECT(VMA_MODIFY_RING_CQ_ARM, 1 << 1);
	EXPECT(VMA_RING_ATTR_LAST, 0);
	EXPECT(VMA_RING_PACKET, 0);
	EXPECT(VMA_RING_EXTERNAL_MEM, 1);
	EXPECT(sizeof(vma_ring_type), 4);
	EXPECT(VMA_HW_PP_EN, 1 << 0);
	EXPECT(VMA_HW_PP_BURST_EN, 1 << 3);
	EXPECT(DATA_VALID_DEV, 0);
	EXPECT(DATA_VALID_SQ, 1);
	EXPECT(DATA_VALID_RQ, 2);

	EXPECT(VMA_EXTRA_API_REGISTER_RECV_CALLBACK, 1 << 0);
	EXPECT(VMA_EXTRA_API_RECVFROM_ZCOPY, 1 << 1);
	EXPECT(VMA_EXTRA_API_FREE_PACKETS, 1 << 2);
	EXPECT(VMA_EXTRA_API_ADD_CONF_RULE, 1 << 3);
	EXPECT(VMA_EXTRA_API_THREAD_OFFLOAD, 1 << 4);
	EXPECT(VMA_EXTRA_API_DUMP_FD_STATS, 1 << 5);
	EXPECT(VMA_EXTRA_API_SOCKETXTREME_POLL, 1 << 6);
	EXPECT(VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_PACKETS, 1 << 7);
	EXPECT(VMA_EXTRA_API_SOCKETXTREME_REF_VMA_BUFF, 1 << 8);
	EXPECT(VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_BUFF, 1 << 9);
	EXPECT(VMA_EXTRA_API_GET_SOCKET_RINGS_NUM, 1 << 10);
	EXPECT(VMA_EXTRA_API_GET_SOCKET_RINGS_FDS, 1 << 11);
	EXPECT(VMA_EXTRA_API_GET_SOCKET_TX_RING_FD, 1 << 12);
	EXPECT(VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER, 1 << 13);
	EXPECT(VMA_EXTRA_API_GET_RING_DIRECT_DESCRIPTORS, 1 << 14);
	EXPECT(VMA_EXTRA_API_ADD_RING_PROFILE, 1 << 16);
	EXPECT(VMA_EXTRA_API_REGISTER_MEMORY_ON_RING, 1 << 17);
	EXPECT(VMA_EXTRA_API_DEREGISTER_MEMORY_ON_RING, 1 << 18);
	EXPECT(VMA_EXTRA_API_MODIFY_RING, 1 << 20);
	EXPECT(VMA_EXTRA_API_IOCTL, 1 << 21);
}

static void api_table(void)
{
	EXPECT(sizeof(struct vma_api_t), 168);
	ALIGNMENT(vma_api_t, 1);
	FIELD(vma_api_t, register_recv_callback, 0, 8);
	FIELD(vma_api_t, recvfrom_zcopy, 8, 8);
	FIELD(vma_api_t, free_packets, 16, 8);
	FIELD(vma_api_t, add_conf_rule, 24, 8);
	FIELD(vma_api_t, thread_offload, 32, 8);
	FIELD(vma_api_t, socketxtreme_poll, 40, 8);
	FIELD(vma_api_t, get_socket_rings_num, 48, 8);
	FIELD(vma_api_t, get_socket_rings_fds, 56, 8);
	FIELD(vma_api_t, get_socket_tx_ring_fd, 64, 8);
	FIELD(vma_api_t, socketxtreme_free_vma_packets, 72, 8);
	FIELD(vma_api_t, socketxtreme_ref_vma_buff, 80, 8);
	FIELD(vma_api_t, socketxtreme_free_vma_buff, 88, 8);
	FIELD(vma_api_t, dump_fd_stats, 96, 8);
	FIELD(vma_api_t, vma_add_ring_profile, 104, 8);
	FIELD(vma_api_t, get_socket_network_header, 112, 8);
	FIELD(vma_api_t, get_ring_direct_descriptors, 120, 8);
	FIELD(vma_api_t, register_memory_on_ring, 128, 8);
	FIELD(vma_api_t, deregister_memory_on_ring, 136, 8);
	FIELD(vma_api_t, vma_modify_ring, 144, 8);
	FIELD(vma_api_t, vma_extra_supported_mask, 152, 8);
	FIELD(vma_api_t, ioctl, 160, 8);
}

static void socketxtreme(void)
{
	EXPECT(sizeof(vma_buff_t), 24);
	FIELD(vma_buff_t, next, 0, 8);
	FIELD(vma_buff_t, payload, 8, 8);
	FIELD(vma_buff_t, len, 16, 2);

	EXPECT(sizeof(vma_packet_desc_t), 40);
	FIELD(vma_packet_desc_t, num_bufs, 0, 8);
	FIELD(vma_packet_desc_t, total_len, 8, 2);
	FIELD(vma_packet_desc_t, buff_lst, 16, 8);
	FIELD(vma_packet_desc_t, hw_timestamp, 24, 16);

	EXPECT(sizeof(vma_completion_t), 80);
	ALIGNMENT(vma_completion_t, 8);
	FIELD(vma_completion_t, packet, 0, 40);
	FIELD(vma_completion_t, events, 40, 8);
	FIELD(vma_completion_t, user_data, 48, 8);
	FIELD(vma_completion_t, src, 56, 16);
	FIELD(vma_completion_t, listen_fd, 72, 4);
}

static void zero_copy(void)
{
	EXPECT(sizeof(vma_packet_t), 16);
	ALIGNMENT(vma_packet_t, 1);
	FIELD(vma_packet_t, packet_id, 0, 8);
	FIELD(vma_packet_t, sz_iov, 8, 8);
	EXPECT(offsetof(vma_packet_t, iov), 16);
	EXPECT(sizeof(((vma_packet_t *)0)->iov[0]), 16);

	EXPECT(sizeof(vma_packets_t), 8);
	ALIGNMENT(vma_packets_t, 1);
	FIELD(vma_packets_t, n_packet_num, 0, 8);
	EXPECT(offsetof(vma_packets_t, pkts), 8);

	EXPECT(sizeof(vma_info_t), 80);
	ALIGNMENT(vma_info_t, 1);
	FIELD(vma_info_t, struct_sz, 0, 8);
	FIELD(vma_info_t, packet_id, 8, 8);
	FIELD(vma_info_t, src, 16, 8);
	FIELD(vma_info_t, dst, 24, 8);
	FIELD(vma_info_t, payload_sz, 32, 8);
	FIELD(vma_info_t, socket_ready_queue_pkt_count, 40, 4);
	FIELD(vma_info_t, socket_ready_queue_byte_count, 44, 4);
	FIELD(vma_info_t, hw_timestamp, 48, 16);
	FIELD(vma_info_t, sw_timestamp, 64, 16);
}

typedef struct vma_ring_alloc_logic_attr ring_alloc_attr;
typedef struct vma_cq_moderation_attr cq_moderation_attr;
typedef struct vma_modify_ring_attr modify_ring_attr;
typedef struct vma_packet_queue_ring_attr packet_queue_ring_attr;
typedef struct vma_external_mem_attr external_mem_attr;
typedef struct vma_ring_type_attr ring_type_attr;

/* The two flags share the 32-bit word at offset 16: ingress bit 0,
 * engress bit 1 (GCC's little-endian allocation, as libvma's build). */
static void ring_alloc_bits(void)
{
	ring_alloc_attr a;
	uint32_t word;

	memset(&a, 0, sizeof(a));
	a.ingress = 1;
	memcpy(&word, (const char *)&a + 16, sizeof(word));
	report("ingress is bit 0 of the word at offset 16", word, 1);
	memset(&a, 0, sizeof(a));
	a.engress = 1;
	memcpy(&word, (const char *)&a + 16, sizeof(word));
	report("engress is bit 1 of the word at offset 16", word, 2);
	memset(&a, 0, sizeof(a));
	a.reserved = 1;
	memcpy(&word, (const char *)&a + 16, sizeof(word));
	report("reserved starts at bit 2 of the word at offset 16", word, 4);
}

static void rings(void)
{
	EXPECT(sizeof(vma_rate_limit_t), 12);
	FIELD(vma_rate_limit_t, rate, 0, 4);
	FIELD(vma_rate_limit_t, max_burst_sz, 4, 4);
	FIELD(vma_rate_limit_t, typical_pkt_sz, 8, 2);

	EXPECT(sizeof(ring_alloc_attr), 20);
	FIELD(ring_alloc_attr, comp_mask, 0, 4);
	FIELD(ring_alloc_attr, ring_alloc_logic, 4, 4);
	FIELD(ring_alloc_attr, ring_profile_key, 8, 4);
	FIELD(ring_alloc_attr, user_id, 12, 4);
	ring_alloc_bits();

	EXPECT(sizeof(cq_moderation_attr), 8);
	FIELD(cq_moderation_attr, cq_moderation_count, 0, 4);
	FIELD(cq_moderation_attr, cq_moderation_period_usec, 4, 4);
#ifdef __cplusplus
	EXPECT(sizeof(struct vma_cq_arm_attr), 1);
#else
	EXPECT(sizeof(struct vma_cq_arm_attr), 0);
#endif
	EXPECT(sizeof(modify_ring_attr), 16);
	FIELD(modify_ring_attr, comp_bit_mask, 0, 4);
	FIELD(modify_ring_attr, ring_fd, 4, 4);
	FIELD(modify_ring_attr, cq_moderation, 8, 8);
	EXPECT(offsetof(modify_ring_attr, cq_arm), 8);

	EXPECT(sizeof(packet_queue_ring_attr), 4);
	EXPECT(sizeof(external_mem_attr), 4);
	EXPECT(sizeof(ring_type_attr), 12);
	FIELD(ring_type_attr, comp_mask, 0, 4);
	FIELD(ring_type_attr, ring_type, 4, 4);
	FIELD(ring_type_attr, ring_pktq, 8, 4);
	FIELD(ring_type_attr, ring_ext, 8, 4);

	EXPECT(sizeof(vma_cmsg_ioctl_user_alloc_t), 17);
	ALIGNMENT(vma_cmsg_ioctl_user_alloc_t, 1);
	FIELD(vma_cmsg_ioctl_user_alloc_t, flags, 0, 1);
	FIELD(vma_cmsg_ioctl_user_alloc_t, memalloc, 1, 8);
	FIELD(vma_cmsg_ioctl_user_alloc_t, memfree, 9, 8);
}

typedef struct dev_data dev_data_s;
typedef struct hw_cq_data hw_cq_data_s;
typedef struct hw_wq_data hw_wq_data_s;
typedef struct hw_rq_data hw_rq_data_s;
typedef struct hw_sq_data hw_sq_data_s;
typedef struct vma_mlx_hw_device_data hw_device_data_s;

static void hardware(void)
{
	EXPECT(sizeof(dev_data_s), 12);
	FIELD(dev_data_s, vendor_id, 0, 4);
	FIELD(dev_data_s, vendor_part_id, 4, 4);
	FIELD(dev_data_s, device_cap, 8, 4);

	EXPECT(sizeof(hw_cq_data_s), 48);
	FIELD(hw_cq_data_s, buf, 0, 8);
	FIELD(hw_cq_data_s, dbrec, 8, 8);
	FIELD(hw_cq_data_s, cq_size, 16, 4);
	FIELD(hw_cq_data_s, cqe_size, 20, 4);
	FIELD(hw_cq_data_s, cqn, 24, 4);
	FIELD(hw_cq_data_s, uar, 32, 8);
	FIELD(hw_cq_data_s, cons_idx, 40, 8);

	EXPECT(sizeof(hw_wq_data_s), 72);
	FIELD(hw_wq_data_s, buf, 0, 8);
	FIELD(hw_wq_data_s, wqe_cnt, 8, 4);
	FIELD(hw_wq_data_s, stride, 12, 4);
	FIELD(hw_wq_data_s, dbrec, 16, 8);
	FIELD(hw_wq_data_s, cq_data, 24, 48);

	EXPECT(sizeof(hw_rq_data_s), 88);
	FIELD(hw_rq_data_s, wq_data, 0, 72);
	FIELD(hw_rq_data_s, head, 72, 8);
	FIELD(hw_rq_data_s, tail, 80, 8);

	EXPECT(sizeof(hw_sq_data_s), 96);
	FIELD(hw_sq_data_s, wq_data, 0, 72);
	FIELD(hw_sq_data_s, sq_num, 72, 4);
	FIELD(hw_sq_data_s, bf, 80, 16);
	FIELD(hw_sq_data_s, bf.reg, 80, 8);
	FIELD(hw_sq_data_s, bf.size, 88, 4);
	FIELD(hw_sq_data_s, bf.offset, 92, 4);

	EXPECT(sizeof(hw_device_data_s), 200);
	FIELD(hw_device_data_s, valid_mask, 0, 4);
	FIELD(hw_device_data_s, dev_data, 4, 12);
	FIELD(hw_device_data_s, sq_data, 16, 96);
	FIELD(hw_device_data_s, rq_data, 112, 88);
}

/* Functions of the reference's signatures (section 2), never called: only
 * assigned, so that a slot of another type does not build. */
static vma_recv_callback_retval_t cb(int fd, size_t sz_iov, struct iovec iov[],
				     struct vma_info_t *info, void *context)
{ (void)fd; (void)sz_iov; (void)iov; (void)info; (void)context; return VMA_PACKET_RECV; }
static int f_register_recv_callback(int s, vma_recv_callback_t c, void *ctx)
{ (void)s; (void)c; (void)ctx; return -1; }
static int f_recvfrom_zcopy(int s, void *buf, size_t len, int *flags, struct sockaddr *from,
			    socklen_t *fromlen)
{ (void)s; (void)buf; (void)len; (void)flags; (void)from; (void)fromlen; return -1; }
static int f_free_packets(int s, struct vma_packet_t *pkts, size_t count)
{ (void)s; (void)pkts; (void)count; return -1; }
static int f_add_conf_rule(const char *line) { (void)line; return -1; }
static int f_thread_offload(int offload, pthread_t tid) { (void)offload; (void)tid; return -1; }
static int f_socketxtreme_poll(int fd, struct vma_completion_t *c, unsigned int n, int flags)
{ (void)fd; (void)c; (void)n; (void)flags; return -1; }
static int f_get_socket_rings_num(int fd) { (void)fd; return -1; }
static int f_get_socket_rings_fds(int fd, int *fds, int sz) { (void)fd; (void)fds; (void)sz; return -1; }
static int f_get_socket_tx_ring_fd(int fd, struct sockaddr *to, socklen_t tolen)
{ (void)fd; (void)to; (void)tolen; return -1; }
static int f_socketxtreme_free_vma_packets(struct vma_packet_desc_t *p, int num)
{ (void)p; (void)num; return -1; }
static int f_vma_buff(struct vma_buff_t *b) { (void)b; return -1; }
static int f_dump_fd_stats(int fd, int level) { (void)fd; (void)level; return -1; }
static int f_add_ring_profile(struct vma_ring_type_attr *p, int *key) { (void)p; (void)key; return -1; }
static int f_get_socket_network_header(int fd, void *ptr, uint16_t *len)
{ (void)fd; (void)ptr; (void)len; return -1; }
static int f_get_ring_direct_descriptors(int fd, struct vma_mlx_hw_device_data *d)
{ (void)fd; (void)d; return -1; }
static int f_register_memory_on_ring(int fd, void *addr, size_t length, uint32_t *key)
{ (void)fd; (void)addr; (void)length; (void)key; return -1; }
static int f_deregister_memory_on_ring(int fd, void *addr, size_t length)
{ (void)fd; (void)addr; (void)length; return -1; }
static int f_modify_ring(struct vma_modify_ring_attr *a) { (void)a; return -1; }
static int f_ioctl(void *cmsg, size_t len) { (void)cmsg; (void)len; return -1; }

static void signatures(void)
{
	struct vma_api_t api;
	vma_recv_callback_t c = cb;

	memset(&api, 0, sizeof(api));
	api.register_recv_callback = f_register_recv_callback;
	api.recvfrom_zcopy = f_recvfrom_zcopy;
	api.free_packets = f_free_packets;
	api.add_conf_rule = f_add_conf_rule;
	api.thread_offload = f_thread_offload;
	api.socketxtreme_poll = f_socketxtreme_poll;
	api.get_socket_rings_num = f_get_socket_rings_num;
	api.get_socket_rings_fds = f_get_socket_rings_fds;
	api.get_socket_tx_ring_fd = f_get_socket_tx_ring_fd;
	api.socketxtreme_free_vma_packets = f_socketxtreme_free_vma_packets;
	api.socketxtreme_ref_vma_buff = f_vma_buff;
	api.socketxtreme_free_vma_buff = f_vma_buff;
	api.dump_fd_stats = f_dump_fd_stats;
	api.vma_add_ring_profile = f_add_ring_profile;
	api.get_socket_network_header = f_get_socket_network_header;
	api.get_ring_direct_descriptors = f_get_ring_direct_descriptors;
	api.register_memory_on_ring = f_register_memory_on_ring;
	api.deregister_memory_on_ring = f_deregister_memory_on_ring;
	api.vma_modify_ring = f_modify_ring;
	api.ioctl = f_ioctl;
	api.vma_extra_supported_mask = VMA_EXTRA_API_IOCTL;
	report("a function of each reference signature fits its slot",
	       api.register_recv_callback(-1, c, NULL) == -1 && api.ioctl != NULL, 1);
}

/* No library in this process: the kernel answers getsockopt(-1, ...). */
static void get_api_without_library(void)
{
	struct vma_api_t *api;

	errno = 0;
	api = vma_get_api();
	report("vma_get_api() is NULL without a library", api == NULL, 1);
	report("errno is EBADF (the kernel refused fd -1)", errno == EBADF, 1);
}

int main(void)
{
	constants();
	api_table();
	socketxtreme();
	zero_copy();
	rings();
	hardware();
	signatures();
	get_api_without_library();
	printf("%d checks, %d failed\n", checks, failures);
	return failures == 0 ? 0 : 1;
}
