/* commands.h - the scope-profiler subcommands. Each lives in its own
 * cmd_<name>.c and is listed once in the table in main.c. A command returns
 * its process exit status: 0 success, 1 a negative result (check found a
 * regression), 2 a usage or input error (with a message on stderr). */
#ifndef SP_CLI_COMMANDS_H
#define SP_CLI_COMMANDS_H

typedef int (*sp_cli_fn)(int argc, char **argv);

struct sp_cli_command {
  const char *name;
  sp_cli_fn fn;
  const char *summary;
};

int sp_cmd_config(int argc, char **argv);
int sp_cmd_inspect(int argc, char **argv);
int sp_cmd_diff(int argc, char **argv);
int sp_cmd_check(int argc, char **argv);
int sp_cmd_export(int argc, char **argv);
int sp_cmd_report(int argc, char **argv);
int sp_cmd_recover(int argc, char **argv);
int sp_cmd_memory(int argc, char **argv);
int sp_cmd_tui(int argc, char **argv);
int sp_cmd_run(int argc, char **argv);
int sp_cmd_import_native(int argc, char **argv);

#endif
