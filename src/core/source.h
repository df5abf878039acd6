/* source.h - capturing region source text at finalize (source.c). */
#ifndef SP_SOURCE_H
#define SP_SOURCE_H

typedef struct sp_source_cache sp_source_cache;

sp_source_cache *sp__source_cache_new(void);
void sp__source_cache_free(sp_source_cache *c);
/* The block (or, for function regions, the function) text starting at
 * path:line; malloc'd, or NULL when the file cannot be read or parsed. */
char *sp__source_text(sp_source_cache *c, const char *path, int line, int is_function, const char *func);

#endif
