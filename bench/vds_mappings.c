/* vds_mappings.c - what an HDF5 virtual dataset of many mappings costs in C,
 * for the design of a streamed run published without copying its blocks
 * (BENCHMARKS.md, "Round 3"): a row's segments in B blocks of R regions are
 * B x R mappings per event column, source file "." (this file).
 *
 * Creates B block datasets of R segments each, then one virtual dataset
 * mapping every (region, block) segment in row order, and times (process
 * CPU) the H5Pset_virtual calls, the create and close, and 4096-value reads
 * through the virtual dataset after reopening it: HDF5 walks every mapping
 * on every read, which is what a reader reading row by row pays.
 *
 *   vds_mappings [--blocks B] [--regions R] [--per N] [--out FILE]
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int nb = 24, nr = 32;
  hsize_t per = 100;
  const char *out = "bench_vds_mappings.h5";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--blocks") && i + 1 < argc) nb = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--regions") && i + 1 < argc) nr = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--per") && i + 1 < argc) per = (hsize_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else {
      fprintf(stderr, "usage: vds_mappings [--blocks B] [--regions R] [--per N] [--out FILE]\n");
      return 2;
    }
  }
  if (nb < 1 || nr < 1 || per < 1) return 2;
  hid_t f = H5Fcreate(out, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return 1;
  hsize_t bn = per * (hsize_t)nr, n = bn * (hsize_t)nb;
  hid_t bs = H5Screate_simple(1, &bn, NULL), vs = H5Screate_simple(1, &n, NULL);
  char name[64];
  for (int b = 0; b < nb; b++) {
    snprintf(name, sizeof name, "/s%06d", b);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT64, bs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0) return 1;
    H5Dclose(d);
  }
  double c0 = cpu_s();
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  long long fill = -1;
  H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill);
  for (int r = 0; r < nr; r++)
    for (int b = 0; b < nb; b++) {
      hsize_t vo = (hsize_t)r * per * (hsize_t)nb + (hsize_t)b * per, so = (hsize_t)r * per, cnt = per;
      H5Sselect_hyperslab(vs, H5S_SELECT_SET, &vo, NULL, &cnt, NULL);
      H5Sselect_hyperslab(bs, H5S_SELECT_SET, &so, NULL, &cnt, NULL);
      snprintf(name, sizeof name, "/s%06d", b);
      if (H5Pset_virtual(dcpl, vs, ".", name, bs) < 0) return 1;
    }
  double c1 = cpu_s();
  H5Sselect_all(vs);
  hid_t d = H5Dcreate2(f, "/v", H5T_NATIVE_INT64, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d < 0) return 1;
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Fclose(f);
  double c2 = cpu_s();
  f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
  d = f >= 0 ? H5Dopen2(f, "/v", H5P_DEFAULT) : H5I_INVALID_HID;
  if (d < 0) return 1;
  hsize_t c = 4096 < n ? 4096 : n, step = n / 200 > c ? n / 200 : c;
  int64_t *buf = malloc(c * sizeof *buf);
  hid_t ms = H5Screate_simple(1, &c, NULL), fs = H5Dget_space(d);
  int reads = 0;
  double c3 = cpu_s();
  for (hsize_t o = 0; buf && o + c <= n; o += step, reads++) {
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &c, NULL);
    if (H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf) < 0) return 1;
  }
  double c4 = cpu_s();
  printf("%d mappings (%d blocks x %d regions): H5Pset_virtual %.3f s, create + close %.3f s CPU; "
         "a read of %llu values through it %.1f us CPU (%d reads)\n",
         nb * nr, nb, nr, c1 - c0, c2 - c1, (unsigned long long)c, reads ? (c4 - c3) / reads * 1e6 : 0.0, reads);
  free(buf);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Sclose(bs);
  H5Sclose(vs);
  H5Dclose(d);
  H5Fclose(f);
  remove(out);
  return 0;
}
