/* pickle.c: the restricted pickle reader and writer of pickle.h.
 *
 * Opcodes (pickletools' names) accepted: PROTO (2 to 5), FRAME, STOP, MARK,
 * EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, TUPLE, TUPLE1-3, BINPUT, LONG_BINPUT,
 * MEMOIZE, BINGET, LONG_BINGET, BINUNICODE, SHORT_BINUNICODE,
 * SHORT_BINSTRING, BINSTRING, SHORT_BINBYTES, BINBYTES, BININT, BININT1,
 * BININT2, LONG1 (up to 8 bytes), BINFLOAT, NONE, NEWTRUE, NEWFALSE, APPEND,
 * APPENDS, SETITEM, SETITEMS, GLOBAL (the names below), REDUCE and BUILD (only
 * in the recipes below). These are what Python 2's and 3's pickle write for
 * cuda-convnet2's batches at protocol 2 (seen with pickletools.dis on
 * batches made by Python 3 + NumPy 1.24; Python 2 writes bytes as
 * SHORT_BINSTRING/BINSTRING instead of _codecs.encode).
 *
 * The recipes, the only calls a file may describe (none is executed: each
 * is recognised by its shape and built here):
 *   _codecs.encode(str, 'latin1')                        -> bytes
 *   __builtin__.bytes() or builtins.bytes()              -> b'' (Python 3 at
 *       protocol 2 writes empty bytes so, also an empty array's data; with
 *       fix_imports=False the module is builtins; any argument is refused)
 *   numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b'b') -> an array
 *   numpy.dtype('f4', False, True), then BUILD (3, '<', None, None, None, -1, -1, 0)
 *   the array, then BUILD (1, shape, dtype, fortran, data bytes) */
#define _POSIX_C_SOURCE 200809L

#include "io/pickle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

enum { GLOBAL_ENCODE = 1, GLOBAL_BYTES, GLOBAL_RECONSTRUCT, GLOBAL_NDARRAY, GLOBAL_DTYPE };

struct ax_pickle_value {
    ax_pickle_kind kind;
    int64_t integer; /* INT, BOOL; GLOBAL: which */
    double number;
    const unsigned char *data; /* STRING, BYTES */
    size_t length;             /* STRING, BYTES: bytes; LIST, TUPLE: items; DICT: pairs */
    ax_pickle_value **items;   /* DICT: key 2i, value 2i + 1 */
    size_t capacity;
    ax_pickle_array array;     /* ARRAY (built once), DTYPE (kind, item_bytes) */
    int state;                 /* ARRAY: 0 made, 1 built; DTYPE: 0 made, 1 built */
    bool sealed;               /* LIST, DICT: fetched from the memo, so no longer changed
                                  (a value can then never contain itself: no cycles) */
};

struct ax_pickle {
    ax_pickle_value **values; /* every value, for the free */
    size_t count, capacity;
    unsigned char **blocks;   /* bytes made by the reader (latin-1 decoding) */
    size_t block_count, block_capacity;
};

typedef struct machine {
    const char *name;
    const unsigned char *bytes;
    size_t size, at, opcode_at;
    unsigned char opcode;
    ax_pickle *pickle;
    ax_pickle_value **stack;
    size_t depth, stack_capacity;
    size_t *marks;
    size_t mark_count, mark_capacity;
    ax_pickle_value **memo;
    size_t memo_capacity, memo_next;
} machine;

static ax_status refuse(const machine *m, const char *why)
{
    return ax_fail(AX_STATUS_BAD_FILE, "%s: pickle opcode 0x%02x at byte %zu: %s (this reader "
                   "takes only dicts, lists, strings, bytes, numbers and NumPy arrays)",
                   m->name, m->opcode, m->opcode_at, why);
}

static bool grow(void **items, size_t *capacity, size_t need, size_t item_size)
{
    if (need <= *capacity)
        return true;
    size_t next = *capacity ? *capacity * 2 : 16;
    while (next < need)
        next *= 2;
    void *grown = realloc(*items, next * item_size);
    if (!grown)
        return false;
    *items = grown;
    *capacity = next;
    return true;
}

static ax_pickle_value *make(machine *m, ax_pickle_kind kind)
{
    ax_pickle *p = m->pickle;
    if (!grow((void **)&p->values, &p->capacity, p->count + 1, sizeof *p->values))
        return NULL;
    ax_pickle_value *v = calloc(1, sizeof *v);
    if (v) {
        v->kind = kind;
        p->values[p->count++] = v;
    }
    return v;
}

static bool push(machine *m, ax_pickle_value *v)
{
    if (!v || !grow((void **)&m->stack, &m->stack_capacity, m->depth + 1, sizeof *m->stack))
        return false;
    m->stack[m->depth++] = v;
    return true;
}

static bool append_item(ax_pickle_value *to, ax_pickle_value *item)
{
    if (!grow((void **)&to->items, &to->capacity, to->length + 1, sizeof *to->items))
        return false;
    to->items[to->length++] = item;
    return true;
}

/* The stack's items above the last mark; *from is where they start. */
static ax_status take_mark(machine *m, size_t *from)
{
    if (m->mark_count == 0)
        return refuse(m, "no MARK before it");
    *from = m->marks[--m->mark_count];
    if (*from > m->depth)
        return refuse(m, "its MARK's values were taken off the stack since");
    return AX_STATUS_OK;
}

static ax_status need(const machine *m, size_t bytes)
{
    if (bytes > m->size - m->at)
        return refuse(m, "its argument runs past the end of the file");
    return AX_STATUS_OK;
}

static uint64_t little(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int b = bytes - 1; b >= 0; b--)
        v = (v << 8) | p[b];
    return v;
}

static bool is_string(const ax_pickle_value *v, const char *text)
{
    return v && (v->kind == AX_PICKLE_STRING || v->kind == AX_PICKLE_BYTES) &&
           v->length == strlen(text) && memcmp(v->data, text, v->length) == 0;
}

static ax_status memo_put(machine *m, uint64_t key)
{
    if (m->depth == 0)
        return refuse(m, "nothing on the stack to remember");
    /* Python numbers its memo from 0 up; a key beyond the file's size is not one. */
    if (key > m->size)
        return refuse(m, "a memo key larger than the file");
    const size_t before = m->memo_capacity;
    if (!grow((void **)&m->memo, &m->memo_capacity, (size_t)key + 1, sizeof *m->memo))
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    for (size_t i = before; i < m->memo_capacity; i++)
        m->memo[i] = NULL; /* slots never stored stay unset */
    m->memo[key] = m->stack[m->depth - 1];
    if (key + 1 > m->memo_next)
        m->memo_next = (size_t)key + 1;
    return AX_STATUS_OK;
}

/* _codecs.encode(text, 'latin1'): code points 0 to 255 become bytes. */
static ax_status latin1(machine *m, const ax_pickle_value *text, ax_pickle_value **out)
{
    ax_pickle *p = m->pickle;
    unsigned char *bytes = malloc(text->length + 1);
    if (!bytes || !grow((void **)&p->blocks, &p->block_capacity, p->block_count + 1,
                        sizeof *p->blocks)) {
        free(bytes);
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    }
    p->blocks[p->block_count++] = bytes;
    size_t n = 0;
    for (size_t i = 0; i < text->length; i++) {
        const unsigned char c = text->data[i];
        if (c < 0x80)
            bytes[n++] = c;
        else if ((c == 0xc2 || c == 0xc3) && i + 1 < text->length &&
                 (text->data[i + 1] & 0xc0) == 0x80)
            bytes[n++] = (unsigned char)(((c & 0x03) << 6) | (text->data[++i] & 0x3f));
        else
            return refuse(m, "_codecs.encode of text that is not latin-1");
    }
    ax_pickle_value *v = make(m, AX_PICKLE_BYTES);
    if (!v)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    v->data = bytes;
    v->length = n;
    *out = v;
    return AX_STATUS_OK;
}

static ax_status reduce(machine *m)
{
    if (m->depth < 2)
        return refuse(m, "REDUCE needs a callable and its arguments");
    ax_pickle_value *call = m->stack[m->depth - 2], *args = m->stack[m->depth - 1];
    if (call->kind != AX_PICKLE_GLOBAL || args->kind != AX_PICKLE_TUPLE)
        return refuse(m, "REDUCE of something other than an allowed global");
    ax_pickle_value *result = NULL;
    ax_pickle_value *const *a = args->items;
    switch (call->integer) {
    case GLOBAL_ENCODE:
        if (args->length != 2 || a[0]->kind != AX_PICKLE_STRING || !is_string(a[1], "latin1"))
            return refuse(m, "_codecs.encode takes (text, 'latin1') only");
        AX_TRY(latin1(m, a[0], &result));
        break;
    case GLOBAL_BYTES:
        /* bytes(n) or bytes(text, codec) would be a call; only the empty one is a value */
        if (args->length != 0)
            return refuse(m, "bytes takes no arguments here (only b'' is written so)");
        if ((result = make(m, AX_PICKLE_BYTES)))
            result->data = (const unsigned char *)""; /* not NULL: ax_pickle_data says bytes */
        break;
    case GLOBAL_RECONSTRUCT:
        if (args->length != 3 || a[0]->kind != AX_PICKLE_GLOBAL ||
            a[0]->integer != GLOBAL_NDARRAY || a[1]->kind != AX_PICKLE_TUPLE ||
            a[1]->length != 1 || a[1]->items[0]->kind != AX_PICKLE_INT ||
            a[1]->items[0]->integer != 0 || !is_string(a[2], "b"))
            return refuse(m, "numpy _reconstruct takes (numpy.ndarray, (0,), b'b') only");
        result = make(m, AX_PICKLE_ARRAY);
        break;
    case GLOBAL_DTYPE: {
        if (args->length != 3 || a[0]->kind != AX_PICKLE_STRING || a[0]->length < 2 ||
            a[0]->length > 3)
            return refuse(m, "numpy.dtype takes a simple type such as 'f4' only");
        const char kind = (char)a[0]->data[0];
        const int bytes = atoi((const char[4]){(char)a[0]->data[1],
                                               a[0]->length > 2 ? (char)a[0]->data[2] : 0, 0, 0});
        if (!strchr("uifb", kind) || !(bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) ||
            (kind == 'f' && bytes < 4) || (kind == 'b' && bytes != 1))
            return refuse(m, "numpy.dtype of a type other than bool, integers, float32, float64");
        result = make(m, AX_PICKLE_DTYPE);
        if (result) {
            result->array.kind = kind;
            result->array.item_bytes = bytes;
        }
        break;
    }
    default:
        return refuse(m, "REDUCE of numpy.ndarray itself");
    }
    if (!result)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    m->depth -= 2;
    push(m, result); /* room: two were just popped */
    return AX_STATUS_OK;
}

static ax_status build(machine *m)
{
    if (m->depth < 2)
        return refuse(m, "BUILD needs an object and its state");
    ax_pickle_value *state = m->stack[m->depth - 1], *object = m->stack[m->depth - 2];
    ax_pickle_value *const *s = state->items;
    if (state->kind != AX_PICKLE_TUPLE || object->state != 0)
        return refuse(m, "BUILD of something other than a new NumPy array or dtype");
    if (object->kind == AX_PICKLE_DTYPE) {
        if (state->length != 8 || s[0]->kind != AX_PICKLE_INT || s[0]->integer != 3 ||
            !(is_string(s[1], "<") || is_string(s[1], "|") ||
              (is_string(s[1], ">") && object->array.item_bytes == 1)))
            return refuse(m, "a dtype state other than (3, '<' or '|', ...): big-endian or "
                          "structured types are not read");
        for (int i = 2; i < 5; i++)
            if (s[i]->kind != AX_PICKLE_NONE)
                return refuse(m, "a structured dtype (fields or names)");
    } else if (object->kind == AX_PICKLE_ARRAY) {
        if (state->length != 5 || s[0]->kind != AX_PICKLE_INT || s[0]->integer != 1 ||
            s[1]->kind != AX_PICKLE_TUPLE || s[2]->kind != AX_PICKLE_DTYPE ||
            s[2]->state != 1 || s[3]->kind != AX_PICKLE_BOOL ||
            (s[4]->kind != AX_PICKLE_BYTES && s[4]->kind != AX_PICKLE_STRING))
            return refuse(m, "an array state other than (1, shape, dtype, fortran, bytes)");
        ax_pickle_array *a = &object->array;
        a->kind = s[2]->array.kind;
        a->item_bytes = s[2]->array.item_bytes;
        a->fortran = s[3]->integer != 0;
        a->dims = (int)s[1]->length;
        if (s[1]->length > 8)
            return refuse(m, "an array of more than 8 dimensions");
        double count = 1; /* in double: a lying shape cannot overflow it */
        for (int d = 0; d < a->dims; d++) {
            const ax_pickle_value *n = s[1]->items[d];
            if (n->kind != AX_PICKLE_INT || n->integer < 0)
                return refuse(m, "an array shape that is not a tuple of counts");
            a->shape[d] = n->integer;
            count *= (double)n->integer;
        }
        if (count * a->item_bytes != (double)s[4]->length)
            return refuse(m, "an array whose data is not as long as its shape and dtype say");
        a->count = (int64_t)count; /* at most the file's size now */
        a->data = s[4]->data;
    } else {
        return refuse(m, "BUILD of something other than a NumPy array or dtype");
    }
    object->state = 1;
    m->depth--;
    return AX_STATUS_OK;
}

static ax_status global(machine *m)
{
    /* "module\nname\n" */
    const unsigned char *start = m->bytes + m->at;
    const unsigned char *end = m->bytes + m->size;
    const unsigned char *first = memchr(start, '\n', (size_t)(end - start));
    const unsigned char *second = first ? memchr(first + 1, '\n', (size_t)(end - first - 1)) : NULL;
    if (!second)
        return refuse(m, "GLOBAL's names run past the end of the file");
    char text[128];
    const size_t module = (size_t)(first - start), name = (size_t)(second - first - 1);
    if (module + name + 2 > sizeof text)
        return refuse(m, "a GLOBAL that is not allowed");
    memcpy(text, start, module);
    text[module] = '.';
    memcpy(text + module + 1, first + 1, name);
    text[module + 1 + name] = '\0';
    m->at = (size_t)(second + 1 - m->bytes);
    static const struct { const char *name; int id; } allowed[] = {
        {"_codecs.encode", GLOBAL_ENCODE},
        {"__builtin__.bytes", GLOBAL_BYTES},
        {"builtins.bytes", GLOBAL_BYTES},
        {"numpy.core.multiarray._reconstruct", GLOBAL_RECONSTRUCT},
        {"numpy._core.multiarray._reconstruct", GLOBAL_RECONSTRUCT},
        {"numpy.ndarray", GLOBAL_NDARRAY},
        {"numpy.dtype", GLOBAL_DTYPE},
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(text, allowed[i].name) == 0) {
            ax_pickle_value *v = make(m, AX_PICKLE_GLOBAL);
            if (!v || !push(m, v))
                return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
            v->integer = allowed[i].id;
            return AX_STATUS_OK;
        }
    char why[200];
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
            *c = '?';
    snprintf(why, sizeof why, "the global %s is not allowed", text);
    return refuse(m, why);
}

static ax_status text_value(machine *m, ax_pickle_kind kind, size_t length)
{
    AX_TRY(need(m, length));
    ax_pickle_value *v = make(m, kind);
    if (!v || !push(m, v))
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    v->data = m->bytes + m->at;
    v->length = length;
    m->at += length;
    return AX_STATUS_OK;
}

static ax_status int_value(machine *m, int64_t value)
{
    ax_pickle_value *v = make(m, AX_PICKLE_INT);
    if (!v || !push(m, v))
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    v->integer = value;
    return AX_STATUS_OK;
}

static ax_status collection(machine *m, ax_pickle_kind kind, size_t from)
{
    ax_pickle_value *v = make(m, kind);
    if (!v)
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    for (size_t i = from; i < m->depth; i++)
        if (!append_item(v, m->stack[i]))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    m->depth = from;
    if (!push(m, v)) /* an empty collection (from == depth) may need room */
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    return AX_STATUS_OK;
}

static ax_status add_items(machine *m, size_t from, bool pairs)
{
    if (from == 0)
        return refuse(m, "no list or dict below its MARK");
    ax_pickle_value *to = m->stack[from - 1];
    if (to->kind != (pairs ? AX_PICKLE_DICT : AX_PICKLE_LIST))
        return refuse(m, pairs ? "SETITEM(S) on something other than a dict"
                               : "APPEND(S) on something other than a list");
    if (to->sealed)
        return refuse(m, "a list or dict changed after it was fetched from the memo (this "
                      "reader makes no self-referring values)");
    if (pairs && (m->depth - from) % 2)
        return refuse(m, "SETITEMS with a key but no value");
    for (size_t i = from; i < m->depth; i++) {
        if (pairs && (i - from) % 2 == 0 && m->stack[i]->kind != AX_PICKLE_STRING &&
            m->stack[i]->kind != AX_PICKLE_BYTES && m->stack[i]->kind != AX_PICKLE_INT)
            return refuse(m, "a dict key that is not a string or an integer");
        if (!append_item(to, m->stack[i]))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
    }
    m->depth = from;
    return AX_STATUS_OK;
}

static ax_status step(machine *m, bool *done)
{
    m->opcode_at = m->at;
    m->opcode = m->bytes[m->at++];
    const unsigned char *p = m->bytes + m->at;
    size_t from = 0;
    switch (m->opcode) {
    case 0x80: /* PROTO */
        AX_TRY(need(m, 1));
        if (p[0] < 2 || p[0] > 5) /* 5's new opcodes (out-of-band buffers) stay refused */
            return refuse(m, "a protocol other than 2 to 5");
        m->at++;
        return AX_STATUS_OK;
    case 0x95: /* FRAME: a length hint */
        AX_TRY(need(m, 8));
        m->at += 8;
        return AX_STATUS_OK;
    case '.':
        if (m->depth != 1 || m->mark_count != 0)
            return refuse(m, "STOP with other than one value on the stack");
        *done = true;
        return AX_STATUS_OK;
    case '(':
        if (!grow((void **)&m->marks, &m->mark_capacity, m->mark_count + 1, sizeof *m->marks))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
        m->marks[m->mark_count++] = m->depth;
        return AX_STATUS_OK;
    case '}':
    case ']':
    case ')':
        return collection(m, m->opcode == '}' ? AX_PICKLE_DICT
                             : m->opcode == ']' ? AX_PICKLE_LIST
                                                : AX_PICKLE_TUPLE, m->depth);
    case 't':
        AX_TRY(take_mark(m, &from));
        return collection(m, AX_PICKLE_TUPLE, from);
    case 0x85:
    case 0x86:
    case 0x87: {
        const size_t n = (size_t)(m->opcode - 0x84);
        if (m->depth < n + (m->mark_count ? m->marks[m->mark_count - 1] : 0))
            return refuse(m, "TUPLE1-3 with too few values on the stack");
        return collection(m, AX_PICKLE_TUPLE, m->depth - n);
    }
    case 'q':
        AX_TRY(need(m, 1));
        m->at++;
        return memo_put(m, p[0]);
    case 'r':
        AX_TRY(need(m, 4));
        m->at += 4;
        return memo_put(m, little(p, 4));
    case 0x94: /* MEMOIZE */
        return memo_put(m, m->memo_next);
    case 'h':
    case 'j': {
        const int bytes = m->opcode == 'h' ? 1 : 4;
        AX_TRY(need(m, (size_t)bytes));
        m->at += (size_t)bytes;
        const uint64_t key = little(p, bytes);
        if (key >= m->memo_capacity || !m->memo[key])
            return refuse(m, "a memo key never stored");
        if (!push(m, m->memo[key]))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
        m->memo[key]->sealed = true;
        return AX_STATUS_OK;
    }
    case 'X':
    case 'B':
        AX_TRY(need(m, 4));
        m->at += 4;
        return text_value(m, m->opcode == 'X' ? AX_PICKLE_STRING : AX_PICKLE_BYTES,
                          (size_t)little(p, 4));
    case 'T': { /* BINSTRING: a signed length */
        AX_TRY(need(m, 4));
        m->at += 4;
        const uint64_t length = little(p, 4);
        if (length >= 0x80000000u)
            return refuse(m, "a negative length");
        return text_value(m, AX_PICKLE_BYTES, (size_t)length);
    }
    case 0x8c: /* SHORT_BINUNICODE */
    case 'U':  /* SHORT_BINSTRING: Python 2's str, bytes here */
    case 'C':  /* SHORT_BINBYTES */
        AX_TRY(need(m, 1));
        m->at++;
        return text_value(m, m->opcode == 0x8c ? AX_PICKLE_STRING : AX_PICKLE_BYTES, p[0]);
    case 'J':
        AX_TRY(need(m, 4));
        m->at += 4;
        return int_value(m, (int32_t)(uint32_t)little(p, 4));
    case 'K':
        AX_TRY(need(m, 1));
        m->at++;
        return int_value(m, p[0]);
    case 'M':
        AX_TRY(need(m, 2));
        m->at += 2;
        return int_value(m, (int64_t)little(p, 2));
    case 0x8a: { /* LONG1: n bytes, little-endian two's complement */
        AX_TRY(need(m, 1));
        const int n = p[0];
        m->at++;
        if (n > 8)
            return refuse(m, "an integer wider than 64 bits");
        AX_TRY(need(m, (size_t)n));
        uint64_t v = little(p + 1, n);
        if (n > 0 && n < 8 && (p[n] & 0x80))
            v |= ~(uint64_t)0 << (8 * n);
        m->at += (size_t)n;
        return int_value(m, (int64_t)v);
    }
    case 'G': {
        AX_TRY(need(m, 8));
        m->at += 8;
        uint64_t bits = 0;
        for (int b = 0; b < 8; b++)
            bits = (bits << 8) | p[b];
        ax_pickle_value *v = make(m, AX_PICKLE_FLOAT);
        if (!v || !push(m, v))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
        memcpy(&v->number, &bits, sizeof bits);
        return AX_STATUS_OK;
    }
    case 'N':
    case 0x88:
    case 0x89: {
        ax_pickle_value *v = make(m, m->opcode == 'N' ? AX_PICKLE_NONE : AX_PICKLE_BOOL);
        if (!v || !push(m, v))
            return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", m->name);
        v->integer = m->opcode == 0x88;
        return AX_STATUS_OK;
    }
    case 'a':
        if (m->depth < 2)
            return refuse(m, "APPEND needs a list and a value");
        return add_items(m, m->depth - 1, false);
    case 's':
        if (m->depth < 3)
            return refuse(m, "SETITEM needs a dict, a key and a value");
        return add_items(m, m->depth - 2, true);
    case 'e':
    case 'u':
        AX_TRY(take_mark(m, &from));
        return add_items(m, from, m->opcode == 'u');
    case 'c':
        return global(m);
    case 'R':
        return reduce(m);
    case 'b':
        return build(m);
    default:
        return refuse(m, "an opcode this reader does not take");
    }
}

ax_status ax_pickle_parse(const char *name, const unsigned char *bytes, size_t size,
                          ax_pickle **out, const ax_pickle_value **root)
{
    *out = NULL;
    *root = NULL;
    machine m = {.name = name, .bytes = bytes, .size = size};
    if (!(m.pickle = calloc(1, sizeof *m.pickle)))
        return ax_fail(AX_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    ax_status status = AX_STATUS_OK;
    bool done = false;
    while (status == AX_STATUS_OK && !done) {
        if (m.at >= size) {
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: the pickle ends at byte %zu without its "
                             "STOP opcode (truncated?)", name, size);
            break;
        }
        status = step(&m, &done);
    }
    /* Values are only complete once built: an array without its BUILD is not one. */
    for (size_t i = 0; status == AX_STATUS_OK && i < m.pickle->count; i++) {
        const ax_pickle_value *v = m.pickle->values[i];
        if ((v->kind == AX_PICKLE_ARRAY || v->kind == AX_PICKLE_DTYPE) && v->state != 1)
            status = ax_fail(AX_STATUS_BAD_FILE, "%s: a NumPy array or dtype made but never "
                             "built", name);
    }
    if (status == AX_STATUS_OK && m.stack[0]->kind == AX_PICKLE_GLOBAL)
        status = ax_fail(AX_STATUS_BAD_FILE, "%s: the pickle holds a bare global", name);
    if (status == AX_STATUS_OK)
        *root = m.stack[0];
    free(m.stack);
    free(m.marks);
    free(m.memo);
    if (status != AX_STATUS_OK) {
        ax_pickle_free(m.pickle);
        *root = NULL;
        return status;
    }
    *out = m.pickle;
    return AX_STATUS_OK;
}

void ax_pickle_free(ax_pickle *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->values[i]->items);
        free(p->values[i]);
    }
    for (size_t i = 0; i < p->block_count; i++)
        free(p->blocks[i]);
    free(p->values);
    free(p->blocks);
    free(p);
}

ax_pickle_kind ax_pickle_kind_of(const ax_pickle_value *v)
{
    return v->kind;
}

size_t ax_pickle_length(const ax_pickle_value *v)
{
    return v->kind == AX_PICKLE_DICT ? v->length / 2 : v->length;
}

const ax_pickle_value *ax_pickle_item(const ax_pickle_value *v, size_t i)
{
    return (v->kind == AX_PICKLE_LIST || v->kind == AX_PICKLE_TUPLE) && i < v->length
               ? v->items[i]
               : NULL;
}

const ax_pickle_value *ax_pickle_key(const ax_pickle_value *v, size_t i)
{
    return v->kind == AX_PICKLE_DICT && i < v->length / 2 ? v->items[2 * i] : NULL;
}

const ax_pickle_value *ax_pickle_dict_value(const ax_pickle_value *v, size_t i)
{
    return v->kind == AX_PICKLE_DICT && i < v->length / 2 ? v->items[2 * i + 1] : NULL;
}

const ax_pickle_value *ax_pickle_get(const ax_pickle_value *dict, const char *key)
{
    if (!dict || dict->kind != AX_PICKLE_DICT)
        return NULL;
    const ax_pickle_value *found = NULL; /* the last one wins, as in Python */
    for (size_t i = 0; i < dict->length / 2; i++)
        if (is_string(dict->items[2 * i], key))
            found = dict->items[2 * i + 1];
    return found;
}

bool ax_pickle_int(const ax_pickle_value *v, int64_t *out)
{
    if (!v || (v->kind != AX_PICKLE_INT && v->kind != AX_PICKLE_BOOL))
        return false;
    *out = v->integer;
    return true;
}

const unsigned char *ax_pickle_data(const ax_pickle_value *v)
{
    return v->kind == AX_PICKLE_STRING || v->kind == AX_PICKLE_BYTES ? v->data : NULL;
}

bool ax_pickle_array_of(const ax_pickle_value *v, ax_pickle_array *out)
{
    if (!v || v->kind != AX_PICKLE_ARRAY || v->state != 1)
        return false;
    *out = v->array;
    return true;
}

/* ---------------------------------------------------------------- writer */

static void put(ax_pickle_writer *w, const void *data, size_t size)
{
    if (w->out_of_memory)
        return;
    if (!grow((void **)&w->data, &w->capacity, w->length + size, 1)) {
        w->out_of_memory = true;
        return;
    }
    memcpy(w->data + w->length, data, size);
    w->length += size;
}

static void put_byte(ax_pickle_writer *w, unsigned char b)
{
    put(w, &b, 1);
}

static void put_u32(ax_pickle_writer *w, uint32_t v)
{
    const unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                                (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    put(w, b, 4);
}

void ax_pickle_write_start(ax_pickle_writer *w)
{
    memset(w, 0, sizeof *w);
    put(w, "\x80\x02", 2);
}

void ax_pickle_write_end(ax_pickle_writer *w)
{
    put_byte(w, '.');
}

void ax_pickle_write_dict_begin(ax_pickle_writer *w)
{
    put(w, "}(", 2);
}

void ax_pickle_write_dict_end(ax_pickle_writer *w)
{
    put_byte(w, 'u');
}

void ax_pickle_write_list_begin(ax_pickle_writer *w)
{
    put(w, "](", 2);
}

void ax_pickle_write_list_end(ax_pickle_writer *w)
{
    put_byte(w, 'e');
}

void ax_pickle_write_string(ax_pickle_writer *w, const char *text)
{
    put_byte(w, 'X');
    put_u32(w, (uint32_t)strlen(text));
    put(w, text, strlen(text));
}

void ax_pickle_write_bytes(ax_pickle_writer *w, const void *data, size_t size)
{
    if (size < 256) {
        put_byte(w, 'U');
        put_byte(w, (unsigned char)size);
    } else {
        put_byte(w, 'T');
        put_u32(w, (uint32_t)size);
    }
    put(w, data, size);
}

void ax_pickle_write_int(ax_pickle_writer *w, int64_t value)
{
    if (value >= 0 && value < 256) {
        put_byte(w, 'K');
        put_byte(w, (unsigned char)value);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        put_byte(w, 'J');
        put_u32(w, (uint32_t)(int32_t)value);
    } else {
        put(w, "\x8a\x08", 2);
        for (int b = 0; b < 8; b++)
            put_byte(w, (unsigned char)((uint64_t)value >> (8 * b)));
    }
}

void ax_pickle_write_array(ax_pickle_writer *w, char kind, int item_bytes, int dims,
                           const int64_t *shape, const void *data)
{
    size_t bytes = (size_t)item_bytes;
    for (int d = 0; d < dims; d++)
        bytes *= (size_t)shape[d];
    static const char reconstruct[] = "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n";
    put(w, reconstruct, sizeof reconstruct - 1);
    /* (0,) b'b' TUPLE3 REDUCE MARK 1 */
    static const unsigned char arguments[] = {'K', 0, 0x85, 'U', 1, 'b', 0x87, 'R', '(', 'K', 1};
    put(w, arguments, sizeof arguments);
    put_byte(w, '(');
    for (int d = 0; d < dims; d++)
        ax_pickle_write_int(w, shape[d]);
    put_byte(w, 't');
    char descr[4];
    snprintf(descr, sizeof descr, "%c%d", kind, item_bytes);
    put(w, "cnumpy\ndtype\n", 13);
    ax_pickle_write_string(w, descr);
    static const unsigned char dtype_call[] = {0x89, 0x88, 0x87, 'R', '(', 'K', 3};
    put(w, dtype_call, sizeof dtype_call);
    ax_pickle_write_string(w, item_bytes == 1 ? "|" : "<");
    /* None None None -1 -1 0 TUPLE BUILD, then fortran False */
    static const unsigned char dtype_state[] = {'N', 'N', 'N', 'J', 0xff, 0xff, 0xff, 0xff, 'J',
                                                0xff, 0xff, 0xff, 0xff, 'K', 0, 't', 'b', 0x89};
    put(w, dtype_state, sizeof dtype_state);
    ax_pickle_write_bytes(w, data, bytes);
    put(w, "tb", 2);
}

void ax_pickle_write_free(ax_pickle_writer *w)
{
    free(w->data);
    memset(w, 0, sizeof *w);
}
