/* cmd_recover.c - `scope-profiler recover SPILL... [-o FILE] [--keep]`: turn
 * the spill file a crashed run left beside its output (<file_path>.spill,
 * written from a fatal-signal handler) into a normal HDF5 profile (schema 3
 * unless the run asked for 2); the spills of an MPI job's ranks
 * (<file_path>.rank<R>.spill) into the job's one file. Once the recovered
 * file holds the whole run and reads back, the crashed run's own files (the
 * spill, a streamed run's raw staging file and its staged HDF5 file, GBs)
 * are removed: they hold nothing the file does not, and recovering the
 * spill again without them would write less over the good file. */
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/error.h"
#include "core/spill.h"
#include "core/stream.h"
#include "output/plan.h"
#include "scope_profiler/reader.h"

static const char usage[] =
    "usage: scope-profiler recover SPILL... [-o FILE] [--keep]\n"
    "\n"
    "Rebuild the profile of a run that died on a fatal signal (SIGSEGV, SIGBUS, SIGFPE,\n"
    "SIGABRT, SIGILL) from the spill file it wrote beside its output. The events recorded\n"
    "before the crash are written as a normal HDF5 profile, the calls still open ending at\n"
    "the crash (cut_short_call_ids); its metadata has recovered_from_signal (the signal\n"
    "number) and recovery_complete (0 when the spill itself was cut short). Given the\n"
    "spills of every rank of an MPI job (<file_path>.rank<R>.spill, also what a rank\n"
    "writes on a termination signal), it writes the job's one file with their ranks;\n"
    "recovery_complete is then 1 only when every rank's spill was whole. A recovery that\n"
    "is not whole says \"partial\", with the calls lost when the spills know them (a spill\n"
    "written while finalize cleared the buffers holds none of their calls). A streamed run\n"
    "whose file could not be written and that was still kept at exit writes a spill too;\n"
    "its recovery says recovered_from_signal -1 and cut_short \"exit\".\n"
    "\n"
    "A streamed run killed with no handler to run (SIGKILL, the OOM killer, a power loss)\n"
    "leaves no spill; give its raw staging file (.<name>.stage.*, a journal of the staged\n"
    "blocks), or the run's file_path when no <file_path>.spill is there and one staging\n"
    "file is beside it. The calls of every staged block the journal lists whole are\n"
    "written, with recovered_from_signal 9 (SIGKILL: the usual cause; the journal cannot\n"
    "tell) and recovery_complete 0: calls not yet handed off to the writer are lost and\n"
    "cannot be counted. A last record the kill cut short is said and ignored. The\n"
    "journal and its staged file are always kept.\n"
    "\n"
    "A run that crashed after its file was published says so and writes nothing. Once the\n"
    "recovered (or published) file holds the whole run and reads back, the crashed run's\n"
    "files are removed, each named: the spills, a streamed run's staging file\n"
    "(.<name>.stage.*) and staged file (.<name>.tmp.*). An incomplete recovery keeps them.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  where to write (default: the crashed run's file_path)\n"
    "  --keep             keep the crashed run's files in every case\n"
    "  -h, --help         this help\n"
    "\n"
    "examples:\n"
    "  scope-profiler recover profiling_data.h5.spill\n"
    "  scope-profiler recover run.h5.spill -o recovered.h5\n"
    "  scope-profiler recover job.h5.rank*.spill\n"
    "  scope-profiler recover .run.h5.stage.Ab12Cd\n";

/* The first 8 bytes of path (0 when shorter or unreadable). */
static int head8(const char *path, unsigned char h[8]) {
  FILE *f = fopen(path, "rb");
  size_t got = f ? fread(h, 1, 8, f) : 0;
  if (f) fclose(f);
  return got == 8;
}

/* A file_path whose spill is not there: its one staging journal beside it
 * (.<name>.stage.*) into out[len]. 1 found, 0 none, -1 several (said). */
static int journal_beside(const char *file_path, char *out, size_t len) {
  char *a = strdup(file_path), *b = strdup(file_path);
  if (!a || !b) {
    free(a);
    free(b);
    return 0;
  }
  const char *dir = dirname(a), *base = basename(b);
  char want[4096];
  snprintf(want, sizeof want, ".%s.stage.", base);
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, want, strlen(want)) != 0) continue;
    char path[8192];
    unsigned char h[8];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!head8(path, h) || !sp__stream_is_journal(h)) continue;
    if (n++ == 0) {
      snprintf(out, len, "%s", path);
      continue;
    }
    if (n == 2) fprintf(stderr, "scope-profiler recover: %s\n", out);
    fprintf(stderr, "scope-profiler recover: %s\n", path);
  }
  if (d) closedir(d);
  free(a);
  free(b);
  if (n > 1)
    fprintf(stderr, "scope-profiler recover: %d staging files beside %s (above): give the one to recover\n", n,
            file_path);
  return n > 1 ? -1 : n;
}

/* The file recovery wrote (or found published) opens as a profile, and a
 * recovered one says it is complete. */
static int reads_back(const struct sp_recover_info *info) {
  struct stat sb;
  sp_results *r = NULL;
  if (stat(info->written, &sb) != 0 || !S_ISREG(sb.st_mode) || sp_results_open(info->written, &r) != SP_OK)
    return 0;
  const sp_metadata_entry *e = info->published ? NULL : sp_results_metadata(r, SP_META_RECOVERY_COMPLETE);
  int ok = info->published || (e && (e->kind == SP_VALUE_INT || e->kind == SP_VALUE_BOOL) && e->i == 1);
  sp_results_free(r);
  return ok;
}

/* Removes the crashed run's files (never the one just written), each named. */
static void clean_up(const struct sp_recover_info *info, int keep) {
  if (!info->nfiles) return;
  const char *why = keep                                      ? "--keep"
                    : !info->complete                         ? "the recovery is not complete"
                    : !reads_back(info)                       ? "the file does not read back"
                                                              : NULL;
  struct stat out;
  int have_out = stat(info->written, &out) == 0;
  for (size_t k = 0; k < info->nfiles; k++) {
    struct stat sb;
    if (why || (have_out && stat(info->files[k], &sb) == 0 && sb.st_dev == out.st_dev && sb.st_ino == out.st_ino))
      printf("kept %s%s%s%s\n", info->files[k], why ? " (" : "", why ? why : "", why ? ")" : "");
    else if (unlink(info->files[k]) == 0)
      printf("removed %s\n", info->files[k]);
    else
      printf("could not remove %s\n", info->files[k]);
  }
}

int sp_cmd_recover(int argc, char **argv) {
  const char *out = NULL;
  int keep = 0;
  const char **spills = calloc((size_t)argc + 1, sizeof *spills);
  size_t nspills = 0;
  if (!spills) {
    fprintf(stderr, "scope-profiler recover: out of memory\n");
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      free(spills);
      return 0;
    } else if (!strcmp(argv[i], "--keep")) {
      keep = 1;
    } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "scope-profiler recover: unknown option %s\n%s", argv[i], usage);
      free(spills);
      return 2;
    } else {
      spills[nspills++] = argv[i];
    }
  }
  if (!nspills) {
    fprintf(stderr, "scope-profiler recover: give the spill file to recover\n%s", usage);
    free(spills);
    return 2;
  }
  /* A staging journal (or a file_path with no spill but one beside it):
   * the recovery of a run killed without a spill. */
  char found[8192] = "";
  unsigned char h[8];
  const char *journal = NULL;
  if (nspills == 1 && head8(spills[0], h) && sp__stream_is_journal(h)) {
    journal = spills[0];
  } else if (nspills == 1 && !(head8(spills[0], h) && !memcmp(h, "SPSPILL1", 8))) {
    char spill[8192];
    snprintf(spill, sizeof spill, "%s.spill", spills[0]);
    struct stat sb;
    int beside = stat(spill, &sb) != 0 ? journal_beside(spills[0], found, sizeof found) : 0;
    if (beside < 0) {
      free(spills);
      return 2;
    }
    if (beside == 0 && stat(spill, &sb) == 0) spills[0] = strdup(spill); /* (leaked: exits soon) */
    if (beside == 1) journal = found;
  }
  struct sp_recover_info info;
  sp_status st = journal ? sp__journal_recover(journal, out, &info) : sp__spill_recover_run(spills, nspills, out, &info);
  if (st != SP_OK) {
    fprintf(stderr, "scope-profiler recover: %s\n", sp_last_error());
    sp__recover_info_free(&info);
    free(spills);
    return 2;
  }
  if (info.journal) {
    printf("recovered %s -> %s (from the journal, no spill: %llu staged segment(s))\n", journal, info.written,
           info.segs);
    if (info.torn) printf("the journal's last record was cut short by the kill: ignored\n");
    printf("partial: calls not yet handed off to the writer are lost; recovery_complete is 0\n");
  } else if (info.published)
    printf("nothing to recover: the run was published complete as %s before the crash\n", info.written);
  else if (nspills == 1)
    printf("recovered %s -> %s\n", spills[0], info.written);
  else
    printf("recovered %zu ranks' spills -> %s\n", nspills, info.written);
  /* What is missing, said before anything is kept or removed for it. */
  if (!info.published && info.rewritten)
    printf("partial: %llu call(s) lost: %s written while finalize cleared the buffers of the calls it had "
           "written (the file that finalize wrote has them, if it was published)\n",
           info.calls_lost, info.rewritten > 1 ? "spills were" : "the spill was");
  else if (!info.published && !info.complete && !info.journal)
    printf("partial: %s; recovery_complete is 0\n",
           nspills > 1 ? "the spills do not hold the whole job (one cut short, a rank's spill missing, or "
                         "streamed blocks lost)"
                       : "the spill does not hold the whole run (cut short, or streamed blocks lost)");
  clean_up(&info, keep);
  sp__recover_info_free(&info);
  free(spills);
  return 0;
}
