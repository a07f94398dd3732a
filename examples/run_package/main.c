/* run_package: runs an npuc object package through the C API (npuc/npuc.h).
 *
 *   run_package PACKAGE_DIR [--fill X] [--input NAME=FILE.bin]... [--threads N] [--exact] [--layers]
 *               [--custom-op LIB.so]...
 *
 * Every input is filled with X (default 0.5) unless a raw file is given for it: FILE.bin holds the tensor's
 * elements row-major, either as float32 or in the input's device type (told apart by the file size). A package with
 * custom layers needs the plugins it was translated with, registered first (--custom-op: npuc_register_custom_op). The program
 * prints the package facts, each output's shape and first values (as float32), and with --layers one line per
 * layer. On any failure it prints npuc_last_error() and exits with status 1 (2 for a bad command line). */
#include <npuc/npuc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 16

static int usage(void) {
  fprintf(stderr,
          "usage: run_package PACKAGE_DIR [--fill X] [--input NAME=FILE.bin]... [--threads N] [--exact] [--layers]\n"
          "                   [--custom-op LIB.so]...\n");
  return 2;
}

/* Prints "what: message" from the last failing call and returns the exit status for a failure. */
static int fail(const char* what, npuc_status s) {
  fprintf(stderr, "run_package: %s failed (%s): %s\n", what, npuc_status_name(s), npuc_last_error());
  return 1;
}

static void print_shape(const npuc_tensor_info* t) {
  int i;
  printf("[");
  for (i = 0; i < t->rank; ++i) printf("%s%lld", i ? "," : "", (long long)t->dims[i]);
  printf("]");
}

static void on_layer(const npuc_layer_info* l, const void* data, size_t bytes, void* user) {
  (void)data;
  (void)user;
  printf("  layer %3d %-6s %-12s %-24s -> %s %s ", l->seq, l->engine, l->kind, l->name, l->output.name,
         npuc_dtype_name(l->output.dtype));
  print_shape(&l->output);
  printf(" (%zu bytes)\n", bytes);
}

/* Reads a whole file into a malloc'ed buffer; returns NULL (and prints why) on failure. */
static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  void* data = NULL;
  long n;
  if (!f) {
    fprintf(stderr, "run_package: cannot open %s\n", path);
    return NULL;
  }
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = malloc((size_t)n + 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
      free(data);
      data = NULL;
    }
    *size = (size_t)n;
  }
  fclose(f);
  if (!data) fprintf(stderr, "run_package: cannot read %s\n", path);
  return data;
}

int main(int argc, char** argv) {
  const char* dir = NULL;
  const char* files[MAX_FILES]; /* "NAME=FILE" */
  int nfiles = 0, threads = 1, exact = 0, layers = 0, i, rc = 0;
  float fill = 0.5f;
  npuc_runtime* rt = NULL;
  npuc_status s;
  const char *target, *numerics, *hash;
  size_t ni = 0, no = 0, k, j;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--fill") == 0 && i + 1 < argc) fill = (float)atof(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc && nfiles < MAX_FILES) files[nfiles++] = argv[++i];
    else if (strcmp(argv[i], "--exact") == 0) exact = 1;
    else if (strcmp(argv[i], "--layers") == 0) layers = 1;
    else if (strcmp(argv[i], "--custom-op") == 0 && i + 1 < argc) {
      if ((s = npuc_register_custom_op(argv[++i])) != NPUC_STATUS_OK) return fail("npuc_register_custom_op", s);
    } else if (argv[i][0] != '-' && !dir) dir = argv[i];
    else return usage();
  }
  if (!dir) return usage();

  printf("npuc %s\n", npuc_version());
  if ((s = npuc_runtime_open(dir, threads, exact, &rt)) != NPUC_STATUS_OK) return fail("npuc_runtime_open", s);
  if ((s = npuc_runtime_target(rt, &target)) != NPUC_STATUS_OK ||
      (s = npuc_runtime_numerics(rt, &numerics)) != NPUC_STATUS_OK ||
      (s = npuc_runtime_content_hash(rt, &hash)) != NPUC_STATUS_OK ||
      (s = npuc_runtime_num_inputs(rt, &ni)) != NPUC_STATUS_OK ||
      (s = npuc_runtime_num_outputs(rt, &no)) != NPUC_STATUS_OK) {
    rc = fail("reading the package facts", s);
    goto done;
  }
  printf("package %s: target %s, numerics %s, %s\n", dir, target, numerics, hash);

  for (k = 0; k < ni; ++k) {
    npuc_tensor_info in;
    const char* file = NULL;
    void* data = NULL;
    size_t bytes = 0;
    npuc_dtype dtype = NPUC_DTYPE_FLOAT32;
    if ((s = npuc_runtime_input_info(rt, k, &in)) != NPUC_STATUS_OK) {
      rc = fail("npuc_runtime_input_info", s);
      goto done;
    }
    for (j = 0; j < (size_t)nfiles; ++j) {
      size_t len = strlen(in.name);
      if (strncmp(files[j], in.name, len) == 0 && files[j][len] == '=') file = files[j] + len + 1;
    }
    if (file) {
      if (!(data = read_file(file, &bytes))) {
        rc = 1;
        goto done;
      }
      /* float32 or the device type, told apart by the size; set_input rejects any other size. */
      if (bytes == in.bytes) dtype = in.dtype;
    } else {
      float* f = (float*)malloc(in.elements * sizeof(float) + 1);
      if (!f) {
        fprintf(stderr, "run_package: out of memory\n");
        rc = 1;
        goto done;
      }
      for (j = 0; j < in.elements; ++j) f[j] = fill;
      data = f;
      bytes = in.elements * sizeof(float);
    }
    printf("input  %s: %s ", in.name, npuc_dtype_name(in.dtype));
    print_shape(&in);
    if (file) printf(" <- %s (%s)\n", file, npuc_dtype_name(dtype));
    else printf(" <- constant %g\n", fill);
    s = npuc_runtime_set_input(rt, in.name, dtype, data, bytes);
    free(data);
    if (s != NPUC_STATUS_OK) {
      rc = fail("npuc_runtime_set_input", s);
      goto done;
    }
  }

  if ((s = npuc_runtime_run(rt, layers ? on_layer : NULL, NULL)) != NPUC_STATUS_OK) {
    rc = fail("npuc_runtime_run", s);
    goto done;
  }

  for (k = 0; k < no; ++k) {
    npuc_tensor_info out;
    float* y;
    size_t written = 0;
    if ((s = npuc_runtime_output_info(rt, k, &out)) != NPUC_STATUS_OK) {
      rc = fail("npuc_runtime_output_info", s);
      goto done;
    }
    y = (float*)malloc(out.elements * sizeof(float) + 1);
    if (!y) {
      fprintf(stderr, "run_package: out of memory\n");
      rc = 1;
      goto done;
    }
    s = npuc_runtime_get_output(rt, out.name, 1, y, out.elements * sizeof(float), &written);
    if (s != NPUC_STATUS_OK) {
      free(y);
      rc = fail("npuc_runtime_get_output", s);
      goto done;
    }
    printf("output %s: %s ", out.name, npuc_dtype_name(out.dtype));
    print_shape(&out);
    printf(":");
    for (j = 0; j < out.elements && j < 10; ++j) printf(" %.6g", y[j]);
    printf("%s\n", out.elements > 10 ? " ..." : "");
    free(y);
  }

done:
  npuc_runtime_close(rt);
  return rc;
}
