/* py_settings.c - the settings table and options, for
 * scope_profiler.profile_config.
 *
 * The Python module keeps no list of settings of its own: its dataclass
 * fields, defaults, documentation, group spellings and the properties of
 * ProfilingConfig are built at import from settings_table() below, and
 * every value goes through the library's setter (sp_options_set), so that
 * types, bounds, choices, "did you mean", the flat+grouped conflict and
 * TOML parsing are the C library's, with its messages.
 *
 * _core.Options wraps one sp_options: set(key, text) by flat name or group
 * spelling, set_items() (flat name -> text, groups expanded; the conflict
 * error when one setting is given both ways), and load(path) for TOML.
 */
#include "py_core.h"

#include <stdlib.h>
#include <string.h>

#include "scope_profiler/settings.h"
#include "structmember.h"

/*====== The table ======*/

static PyObject *choices_tuple(const char *const *choices) {
  size_t n = 0;
  while (choices && choices[n]) n++;
  PyObject *t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; t && i < n; i++) {
    PyObject *s = PyUnicode_FromString(choices[i]);
    if (!s) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
  }
  return t;
}

static const char *type_word(sp_setting_type t) {
  switch (t) {
  case SP_SETTING_BOOL: return "bool";
  case SP_SETTING_INT: return "int";
  case SP_SETTING_STRING: return "str";
  case SP_SETTING_ENUM: return "enum";
  case SP_SETTING_LIST: return "list";
  }
  return "str";
}

static const char *status_word(sp_setting_status s) {
  switch ((int)s) {
  case SP_SETTING_READY: return "ready";
  case SP_SETTING_PLANNED: return "planned";
  case SP_SETTING_UNBUILT: return "unbuilt";
  default: return "unknown";
  }
}

/* A tuple of row(i) for i < n (NULL with the exception row() raised). */
static PyObject *tuple_of(size_t n, PyObject *(*row)(size_t i)) {
  PyObject *t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; t && i < n; i++) {
    PyObject *d = row(i);
    if (!d) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, d);
  }
  return t;
}

/* One setting as a dict: name, group, field, spelling, env, type, default
 * (text or None), min, max, choices, doc, status. */
static PyObject *setting_row(size_t i) {
  sp_setting_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  sp_status st = sp_setting_info_at(i, &info);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the settings table");
  PyObject *choices = choices_tuple(info.choices);
  if (!choices) return NULL;
  return Py_BuildValue("{s:s,s:s,s:s,s:z,s:s,s:s,s:z,s:L,s:L,s:N,s:s,s:s}", "name", info.name, "group", info.group,
                       "field", info.field, "spelling", info.spelling, "env", info.env, "type",
                       type_word(info.type), "default", info.has_default ? info.default_text : NULL, "min",
                       (long long)info.min, "max", (long long)info.max, "choices", choices, "doc", info.doc,
                       "status", status_word(info.status));
}

/* One group as a dict: name, title, doc, spelled. */
static PyObject *group_row(size_t i) {
  sp_setting_group_info g;
  memset(&g, 0, sizeof g);
  g.size = sizeof g;
  sp_status st = sp_setting_group_at(i, &g);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the settings groups");
  return Py_BuildValue("{s:s,s:s,s:s,s:O}", "name", g.name, "title", g.title, "doc", g.doc ? g.doc : "", "spelled",
                       g.spelled ? Py_True : Py_False);
}

/* settings_table() -> tuple of dicts, one per setting in table order. */
static PyObject *py_settings_table(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return tuple_of(sp_setting_count(), setting_row);
}

/* setting_groups() -> tuple of dicts, one per group. */
static PyObject *py_setting_groups(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return tuple_of(sp_setting_group_count(), group_row);
}

/* find_setting(key) -> flat name (key is a flat name or a group spelling);
 * UnknownSettingError with the library's "did you mean" otherwise. */
static PyObject *py_find_setting(PyObject *self, PyObject *arg) {
  (void)self;
  const char *key = PyUnicode_AsUTF8(arg);
  if (!key) return NULL;
  size_t i;
  sp_status st = sp_setting_find(key, &i);
  if (st != SP_OK) return sp_py_raise(st, "unknown setting");
  return PyUnicode_FromString(sp_setting_name(i));
}

/* check_setting(key, text): the library's per-value validation. */
static PyObject *py_check_setting(PyObject *self, PyObject *args) {
  (void)self;
  const char *key, *value;
  if (!PyArg_ParseTuple(args, "ss:check_setting", &key, &value)) return NULL;
  sp_status st = sp_setting_check(key, value);
  if (st != SP_OK) return sp_py_raise(st, "invalid setting");
  Py_RETURN_NONE;
}

/*====== Options ======*/

typedef struct {
  PyObject_HEAD
  sp_options o;
} OptionsObject;

static PyTypeObject OptionsType;

static PyObject *options_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds)))
    return PyErr_Format(PyExc_TypeError, "Options() takes no arguments");
  OptionsObject *self = (OptionsObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  sp_options init = SP_OPTIONS_INIT;
  self->o = init;
  return (PyObject *)self;
}

static void options_dealloc(OptionsObject *self) {
  sp_options_clear(&self->o);
  Py_TYPE(self)->tp_free(self);
}

/* set(key, text-or-None) */
static PyObject *options_set(OptionsObject *self, PyObject *args) {
  const char *key, *value;
  if (!PyArg_ParseTuple(args, "sz:set", &key, &value)) return NULL;
  sp_status st = sp_options_set(&self->o, key, value);
  if (st != SP_OK) return sp_py_raise(st, "invalid setting");
  Py_RETURN_NONE;
}

struct collect {
  PyObject *list;
  int failed;
};

static void collect_item(const char *name, const char *value, void *user) {
  struct collect *c = user;
  if (c->failed) return;
  PyObject *t = Py_BuildValue("(ss)", name, value);
  if (!t || PyList_Append(c->list, t) < 0) c->failed = 1;
  Py_XDECREF(t);
}

/* items() -> [(flat name, text)] of the settings that are set, groups
 * expanded; ConfigurationError when one is set both flat and grouped. */
static PyObject *options_items(OptionsObject *self, PyObject *noargs) {
  (void)noargs;
  struct collect c = {PyList_New(0), 0};
  if (!c.list) return NULL;
  sp_status st = sp_options_each_set(&self->o, collect_item, &c);
  if (st != SP_OK) {
    Py_DECREF(c.list);
    return sp_py_raise(st, "conflicting settings");
  }
  if (c.failed) {
    Py_DECREF(c.list);
    return NULL;
  }
  return c.list;
}

/* Options.load(path) -> Options read from a TOML file's [profiling] table. */
static PyObject *options_load(PyObject *cls, PyObject *arg) {
  PyObject *bytes;
  if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
  OptionsObject *self = (OptionsObject *)PyObject_CallNoArgs(cls);
  if (!self) {
    Py_DECREF(bytes);
    return NULL;
  }
  sp_status st = sp_load_profiling_config(PyBytes_AS_STRING(bytes), &self->o);
  Py_DECREF(bytes);
  if (st != SP_OK) {
    Py_DECREF(self);
    return sp_py_raise(st, "cannot load the configuration file");
  }
  return (PyObject *)self;
}

static PyMethodDef options_methods[] = {
    {"set", (PyCFunction)options_set, METH_VARARGS, "set(key, text): one setting, validated by the library."},
    {"items", (PyCFunction)options_items, METH_NOARGS, "[(flat name, text)] of what is set, groups expanded."},
    {"load", (PyCFunction)options_load, METH_O | METH_CLASS, "Options.load(path): the [profiling] table of a TOML file."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OptionsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.Options",
    .tp_basicsize = sizeof(OptionsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A set of settings, each unset until given (the C library's sp_options).",
    .tp_new = options_new,
    .tp_dealloc = (destructor)options_dealloc,
    .tp_methods = options_methods,
};

static PyMethodDef settings_module_methods[] = {
    {"settings_table", py_settings_table, METH_NOARGS, "Every setting of the C library's table, in order."},
    {"setting_groups", py_setting_groups, METH_NOARGS, "The groups of the settings table."},
    {"find_setting", py_find_setting, METH_O, "The flat name of a setting key (did-you-mean on error)."},
    {"check_setting", py_check_setting, METH_VARARGS, "check_setting(key, text): validate one value."},
    {NULL, NULL, 0, NULL},
};

int sp_py_settings_init(PyObject *module) {
  if (PyType_Ready(&OptionsType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Options", (PyObject *)&OptionsType) < 0) return -1;
  return PyModule_AddFunctions(module, settings_module_methods);
}
