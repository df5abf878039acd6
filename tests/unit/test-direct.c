/* test-direct.c - the O_DIRECT write layer (src/output/h5direct.c): every
 * size and offset round-trips byte for byte, whether the aligned body goes
 * around the page cache or O_DIRECT is refused (at the open or at the
 * write, by the test hook; a tmpfs destination); a read after a direct
 * write sees the new bytes; the direct path is really taken (the byte
 * counter, and O_DIRECT in the descriptor's flags in /proc/self/fdinfo);
 * mapped memory keeps its alignment and bytes as it grows; and the HDF5
 * driver's write-behind keeps every byte written, in order. */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/h5direct.h"
#include "directutil.h"
#include "harness.h"


static unsigned char byte_at(size_t i, unsigned seed) { return (unsigned char)(i * 131u + seed * 7u + (i >> 12)); }

/* Writes `len` bytes at `off` into a new file `name` from memory `shift`
 * bytes past a 4096 boundary, and checks the file byte for byte (a hole
 * before `off` reads as zeros). Returns the bytes that went direct. */
static uint64_t round_trip(const char *name, size_t len, uint64_t off, size_t shift) {
  unsigned char *m = NULL;
  ASSERT_EQ(posix_memalign((void **)&m, SP_DIRECT_ALIGN, len + shift + 1), 0);
  for (size_t i = 0; i < len; i++) m[shift + i] = byte_at(i, (unsigned)len);
  int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ASSERT(fd >= 0);
  struct sp_direct d;
  sp__direct_init(&d, fd, name);
  uint64_t b0 = sp__direct_bytes;
  ASSERT_EQ(sp__direct_pwrite(&d, m + shift, len, off), 0);
  uint64_t went = sp__direct_bytes - b0;
  sp__direct_end(&d);
  ASSERT_EQ(close(fd), 0);
  struct stat st;
  ASSERT_EQ(stat(name, &st), 0);
  ASSERT_EQ(st.st_size, (long long)(off + len));
  unsigned char *back = malloc(off + len + 1);
  ASSERT(back != NULL);
  int rfd = open(name, O_RDONLY | O_CLOEXEC);
  ASSERT(rfd >= 0);
  ASSERT_EQ(pread(rfd, back, off + len, 0), (long long)(off + len));
  close(rfd);
  for (uint64_t i = 0; i < off; i++)
    if (back[i]) SP_FAIL_("%s: byte %llu of the hole is %u", name, (unsigned long long)i, back[i]);
  for (size_t i = 0; i < len; i++)
    if (back[off + i] != byte_at(i, (unsigned)len))
      SP_FAIL_("%s (len %zu, off %llu, shift %zu): byte %zu differs", name, len, (unsigned long long)off, shift, i);
  free(back);
  free(m);
  unlink(name);
  return went;
}

static const size_t sizes[] = {1,
                               4095,
                               4096,
                               4097,
                               SP_DIRECT_MIN - 1,
                               SP_DIRECT_MIN,
                               SP_DIRECT_MIN + 4095,
                               SP_DIRECT_MIN + 4096 + 1,
                               2 * SP_DIRECT_MIN + 4097,
                               (5 << 20) + 4095};
static const uint64_t offs[] = {0, 1, 4095, 4096, 4097, 3 << 20};

/* Every size at every offset, from aligned and unaligned memory; `hook`:
 * the refusal to simulate (0 none). Returns the bytes that went direct. */
static uint64_t all_sizes(int hook) {
  sp__direct_refuse = hook;
  uint64_t went = 0;
  char name[64];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (size_t j = 0; j < sizeof offs / sizeof offs[0]; j++)
      for (size_t shift = 0; shift <= 8; shift += 8) {
        snprintf(name, sizeof name, "f_%zu_%zu_%zu", i, j, shift);
        uint64_t w = round_trip(name, sizes[i], offs[j], shift);
        /* a body under SP_DIRECT_MIN stays in the page cache */
        if (sizes[i] < SP_DIRECT_MIN) ASSERT_EQ(w, 0);
        went += w;
      }
  sp__direct_refuse = 0;
  return went;
}

SP_TEST(every_size_and_offset_round_trips_direct) {
  uint64_t went = all_sizes(0);
  if (dir_takes_direct()) ASSERT_GT(went, (uint64_t)40 << 20);
  else ASSERT_EQ(went, 0);
}

SP_TEST(refused_at_open_writes_plain) { ASSERT_EQ(all_sizes(1), 0); }

SP_TEST(refused_at_the_write_writes_plain) { ASSERT_EQ(all_sizes(2), 0); }

/* tmpfs: whether it takes O_DIRECT depends on the kernel (6.6 and later
 * do); the bytes must be right either way. */
SP_TEST(tmpfs_destination_round_trips) {
  char dir[64];
  if (!shm_dir(dir, sizeof dir, "direct")) SKIP("no /dev/shm");
  char name[128];
  snprintf(name, sizeof name, "%s/f", dir);
  round_trip(name, (3 << 20) + 4097, 4095, 0);
  round_trip(name, (3 << 20) + 1, 0, 8);
  rmdir(dir);
}

/* The kernel keeps the page cache coherent with direct writes: pages read
 * (cached) before a direct write of their range read the new bytes after. */
SP_TEST(read_after_direct_write_sees_new_bytes) {
  if (!dir_takes_direct()) SKIP("this directory takes no O_DIRECT writes");
  enum { N = 1 << 20 };
  unsigned char *m = NULL, *back = malloc(N);
  ASSERT(back != NULL);
  ASSERT_EQ(posix_memalign((void **)&m, SP_DIRECT_ALIGN, N), 0);
  memset(m, 'A', N);
  int fd = open("c", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ASSERT(fd >= 0);
  ASSERT_EQ(pwrite(fd, m, N, 0), N);
  ASSERT_EQ(pread(fd, back, N, 0), N); /* now in the page cache */
  ASSERT_EQ(back[N / 2], 'A');
  memset(m, 'B', N);
  struct sp_direct d;
  sp__direct_init(&d, fd, "c");
  uint64_t b0 = sp__direct_bytes;
  ASSERT_EQ(sp__direct_pwrite(&d, m, N, 0), 0);
  ASSERT_EQ(sp__direct_bytes - b0, N);
  /* the descriptor the bytes went through has O_DIRECT set */
  char info[64], line[256];
  snprintf(info, sizeof info, "/proc/self/fdinfo/%d", d.dfd);
  FILE *f = fopen(info, "r");
  ASSERT(f != NULL);
  unsigned long flags = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "flags: %lo", &flags) == 1) break;
  fclose(f);
  ASSERT((flags & O_DIRECT) != 0);
  sp__direct_end(&d);
  ASSERT_EQ(pread(fd, back, N, 0), N);
  for (int i = 0; i < N; i++)
    if (back[i] != 'B') SP_FAIL_("byte %d reads %c after the direct write", i, back[i]);
  int rfd = open("c", O_RDONLY | O_CLOEXEC); /* a reader of its own, too */
  ASSERT(rfd >= 0);
  ASSERT_EQ(pread(rfd, back, N, 0), N);
  ASSERT_EQ(back[0], 'B');
  ASSERT_EQ(back[N - 1], 'B');
  close(rfd);
  close(fd);
  free(m);
  free(back);
}

/* Mapped memory grows 1 MiB at a time, as HDF5's in-memory file does:
 * page-aligned at every step, its bytes kept. */
SP_TEST(mapped_memory_grows_aligned_and_keeps_its_bytes) {
  size_t cap = 0, step = 1 << 20;
  unsigned char *p = sp__direct_map(step, &cap);
  ASSERT(p != NULL);
  ASSERT_GE(cap, step);
  for (size_t size = step; size <= 64 * step; size += step) {
    ASSERT_EQ((uintptr_t)p % SP_DIRECT_ALIGN, 0);
    for (size_t i = (size - step + 4092) / 4093 * 4093; i < size; i += 4093) p[i] = byte_at(i, 1);
    unsigned char *q = sp__direct_remap(p, size + step, &cap);
    ASSERT(q != NULL);
    ASSERT_GE(cap, size + step);
    p = q;
    for (size_t i = 0; i < size; i += 4093)
      if (p[i] != byte_at(i, 1)) SP_FAIL_("byte %zu lost growing to %zu", i, size + step);
  }
  sp__direct_unmap(p, cap);
}

/* The HDF5 driver: three contiguous datasets written in pieces of 1 to
 * 70000 values, taking turns (as the event sink writes rows), some pieces
 * written twice with other values, a piece read back while others are
 * pending; the file, opened with HDF5's default driver, holds the last
 * values written everywhere, and the pieces' bytes went direct. */
SP_TEST(driver_gathers_interleaved_writes_and_reads_them_back) {
  enum { N = 600000, D = 3 };
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_sieve_buf_size(fapl, 0); /* as the writers have it (h5common.c) */
  ASSERT_EQ(sp__direct_fapl(fapl), 1);
  hid_t file = H5Fcreate("d.h5", H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  ASSERT(file >= 0);
  int64_t *want = calloc((size_t)D * N, sizeof *want), *buf = malloc(70000 * sizeof *buf);
  ASSERT(want && buf);
  hid_t ds[D];
  hsize_t dim = N;
  hid_t space = H5Screate_simple(1, &dim, NULL);
  for (int k = 0; k < D; k++) {
    char name[8];
    snprintf(name, sizeof name, "c%d", k);
    ds[k] = H5Dcreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(ds[k] >= 0);
  }
  uint64_t b0 = sp__direct_bytes;
  hsize_t at[D] = {0};
  unsigned seed = 1;
  for (int turn = 0; at[0] < N || at[1] < N || at[2] < N; turn++) {
    int k = turn % D;
    seed = seed * 1103515245u + 12345u;
    hsize_t n = 1 + (seed >> 8) % (k == 2 ? 70000 : 9000), start = at[k];
    int again = turn % 17 == 5 && start > 5000; /* overwrite the last 5000 values and go on */
    if (again) start -= 5000;
    if (start + n > N) n = N - start;
    if (!n) continue;
    for (hsize_t i = 0; i < n; i++) buf[i] = want[(size_t)k * N + start + i] = (int64_t)(turn * 1000003 + i);
    hid_t fs = H5Dget_space(ds[k]), ms = H5Screate_simple(1, &n, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL);
    ASSERT(H5Dwrite(ds[k], H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf) >= 0);
    if (turn == 40) { /* a read while pieces are pending */
      int64_t v = -1;
      hsize_t one = 1, last = start + n - 1;
      hid_t m1 = H5Screate_simple(1, &one, NULL);
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, &last, NULL, &one, NULL);
      ASSERT(H5Dread(ds[k], H5T_NATIVE_INT64, m1, fs, H5P_DEFAULT, &v) >= 0);
      ASSERT_EQ(v, want[(size_t)k * N + last]);
      H5Sclose(m1);
    }
    H5Sclose(ms);
    H5Sclose(fs);
    if (start + n > at[k]) at[k] = start + n;
  }
  for (int k = 0; k < D; k++) H5Dclose(ds[k]);
  H5Sclose(space);
  ASSERT(H5Fclose(file) >= 0);
  uint64_t went = sp__direct_bytes - b0;
  hid_t rf = H5Fopen("d.h5", H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT(rf >= 0);
  int64_t *back = malloc((size_t)N * sizeof *back);
  ASSERT(back != NULL);
  for (int k = 0; k < D; k++) {
    char name[8];
    snprintf(name, sizeof name, "c%d", k);
    hid_t d = H5Dopen2(rf, name, H5P_DEFAULT);
    ASSERT(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0);
    for (int i = 0; i < N; i++)
      if (back[i] != want[(size_t)k * N + i]) SP_FAIL_("c%d[%d] = %lld, written %lld", k, i, (long long)back[i],
                                                       (long long)want[(size_t)k * N + i]);
    H5Dclose(d);
  }
  H5Fclose(rf);
  free(back);
  free(want);
  free(buf);
  if (dir_takes_direct()) ASSERT_GT(went, (uint64_t)D * N * 8 / 2);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
