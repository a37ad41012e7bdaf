/* Copying a counters struct out to a caller that names its size
 * (profile2_queue_get_stats and the like, include/profile2.h). */
#ifndef P2_API_SIZED_COPY_H
#define P2_API_SIZED_COPY_H

#include <stddef.h>
#include <string.h>

/* Copy the first dst_size bytes of src (src_size bytes) to dst, zeroing
 * what dst has beyond src: the caller's struct may be older (shorter) or
 * newer (longer) than the library's, whose fields only grow at the end.
 * AS-safe (memcpy and memset are async-signal-safe). */
static inline void p2_sized_copy(void *dst, size_t dst_size, const void *src, size_t src_size) {
  size_t n = dst_size < src_size ? dst_size : src_size;
  memcpy(dst, src, n);
  if (dst_size > n) memset((char *)dst + n, 0, dst_size - n);
}

#endif
