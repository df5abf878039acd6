/* read_vlen.c - the lengths a variable-length string dataset claims, checked
 * against the file before HDF5 reads it.
 *
 * On disk each element of such a dataset is a 4-byte length followed by the
 * global-heap id of its bytes. HDF5's conversion allocates and zeroes a
 * buffer of the claimed length before it looks at the heap, so one corrupt
 * length (0x55555555 in a fuzzed file) costs 1.4 GB before the read fails.
 * The bytes of every string live in the file, so their lengths cannot sum to
 * more than the file's size: we read the elements' raw form (contiguous
 * storage from the file, unfiltered chunks through H5Dread_chunk) and refuse
 * a dataset whose lengths do not fit, naming it. Storage we cannot read raw
 * (compact datasets, filtered chunks, attributes: all small, in object
 * headers or behind a filter we would have to run) is left to HDF5.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "read/read_internal.h"

/* Bytes [addr, addr + size) of the file behind `file`, for the drivers the
 * reader opens files with (sec2 for paths, core for images). */
static int raw_read(hid_t file, haddr_t addr, size_t size, unsigned char *buf) {
  hid_t fapl = H5Fget_access_plist(file);
  hid_t driver = fapl >= 0 ? H5Pget_driver(fapl) : H5I_INVALID_HID;
  void *handle = NULL;
  int ok = driver >= 0 && (driver == H5FD_SEC2 || driver == H5FD_CORE) &&
           H5Fget_vfd_handle(file, fapl, &handle) >= 0 && handle;
  hsize_t eof = 0;
  if (ok) ok = H5Fget_filesize(file, &eof) >= 0 && addr <= eof && size <= eof - addr;
  if (ok && driver == H5FD_SEC2) {
    int fd = *(int *)handle;
    for (size_t got = 0; ok && got < size;) {
      ssize_t k = pread(fd, buf + got, size - got, (off_t)(addr + got));
      ok = k > 0;
      got += k > 0 ? (size_t)k : 0;
    }
  } else if (ok) {
    const unsigned char *mem = *(unsigned char *const *)handle;
    ok = mem != NULL;
    if (ok) memcpy(buf, mem + addr, size);
  }
  if (fapl >= 0) H5Pclose(fapl);
  return ok ? 0 : -1;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct scan {
  const char *what;
  uint64_t limit; /* the file's size */
  uint64_t sum;
  size_t elem;    /* bytes of one element on disk */
};

/* Add the lengths of elements [first, first + count) held in raw[]. */
static sp_status add_lengths(struct scan *s, const unsigned char *raw, size_t first, size_t count) {
  for (size_t i = 0; i < count; i++) {
    uint32_t len = le32(raw + i * s->elem);
    s->sum += len;
    if (len > s->limit || s->sum > s->limit)
      return sp__set_error(SP_ERR_FORMAT,
                           "%s: string %zu claims %lu bytes, %s the file's %llu bytes hold "
                           "(a corrupt or hand-made file)",
                           s->what, first + i, (unsigned long)len, len > s->limit ? "more than" : "past what",
                           (unsigned long long)s->limit);
  }
  return SP_OK;
}

static sp_status scan_chunks(struct scan *s, hid_t d, hid_t dcpl, size_t n) {
  hsize_t cdim = 0, nchunks = 0;
  hid_t space = H5Dget_space(d);
  int nfilters = H5Pget_nfilters(dcpl);
  if (space < 0 || H5Pget_chunk(dcpl, 1, &cdim) != 1 || cdim == 0 || nfilters < 0 ||
      H5Dget_num_chunks(d, space, &nchunks) < 0) {
    if (space >= 0) H5Sclose(space);
    return SP_OK; /* not a shape we can scan: HDF5's checks apply */
  }
  unsigned all = nfilters >= 32 ? ~0u : (1u << nfilters) - 1;
  unsigned char *buf = NULL;
  sp_status st = SP_OK;
  for (hsize_t c = 0; c < nchunks && st == SP_OK; c++) {
    hsize_t off = 0, size = 0;
    haddr_t addr = 0;
    unsigned mask = 0;
    if (H5Dget_chunk_info(d, space, c, &off, &mask, &addr, &size) < 0 || off >= n) continue;
    if (nfilters > 0 && (mask & all) != all) continue; /* filtered: its raw bytes are not the elements */
    size_t count = (size_t)(cdim < n - off ? cdim : n - off);
    if (size > s->limit || size < (hsize_t)count * s->elem) continue; /* HDF5 refuses such a chunk itself */
    unsigned char *nb = realloc(buf, size ? (size_t)size : 1);
    if (!nb) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", s->what);
      break;
    }
    buf = nb;
    uint32_t filters = 0;
    hsize_t offset[1] = {off};
    if (H5Dread_chunk(d, H5P_DEFAULT, offset, &filters, buf) < 0) continue;
    st = add_lengths(s, buf, (size_t)off, count);
  }
  free(buf);
  H5Sclose(space);
  return st;
}

sp_status sp__vlen_check(hid_t d, size_t n, const char *what) {
  if (n == 0) return SP_OK;
  hid_t file = H5Iget_file_id(d), fcpl = file >= 0 ? H5Fget_create_plist(file) : H5I_INVALID_HID;
  size_t sizeof_addr = 0, sizeof_size = 0;
  hsize_t eof = 0;
  if (file >= 0 && H5Fget_filesize(file, &eof) < 0) eof = 0;
  hid_t dcpl = H5Dget_create_plist(d);
  sp_status st = SP_OK;
  if (fcpl >= 0 && H5Pget_sizes(fcpl, &sizeof_addr, &sizeof_size) >= 0 && eof > 0 && dcpl >= 0 && sizeof_addr) {
    struct scan s = {what, (uint64_t)eof, 0, 4 + sizeof_addr + 4};
    H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout == H5D_CONTIGUOUS) {
      haddr_t addr = H5Dget_offset(d);
      size_t bytes = n * s.elem;
      unsigned char *raw = NULL;
      if (addr != HADDR_UNDEF && n <= (size_t)eof / s.elem) {
        if (!(raw = malloc(bytes))) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", what);
        else if (raw_read(file, addr, bytes, raw) == 0) st = add_lengths(&s, raw, 0, n);
      }
      free(raw);
    } else if (layout == H5D_CHUNKED) {
      st = scan_chunks(&s, d, dcpl, n);
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (fcpl >= 0) H5Pclose(fcpl);
  if (file >= 0) H5Fclose(file);
  return st;
}
