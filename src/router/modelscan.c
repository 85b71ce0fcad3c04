/* modelscan.c - the request body scanner: a byte-driven JSON state machine
 * that validates the whole body and captures one string, the top-level
 * "model".  Nothing is buffered but that value (256 bytes) and one bit
 * per nesting level, so a piece may end anywhere: inside a \u escape, a
 * number, a literal, a UTF-8 sequence or the BOM.  The design decisions
 * (BOM, duplicates, unescaped key comparison) are in modelscan.h. */
#include "router/modelscan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum {
    ST_START, /* byte 0: a BOM, whitespace or the object */
    ST_BOM1,  /* EF seen */
    ST_BOM2,  /* EF BB seen */
    ST_TOP,   /* whitespace or the object */
    ST_OBJ_FIRST,
    ST_OBJ_KEY,
    ST_COLON,
    ST_VALUE,
    ST_ARR_FIRST,
    ST_AFTER, /* after a value: ',' or the container's end */
    ST_STR,
    ST_STR_ESC,
    ST_STR_U,
    ST_NUM_MINUS,
    ST_NUM_ZERO,
    ST_NUM_INT,
    ST_NUM_DOT,
    ST_NUM_FRAC,
    ST_NUM_E,
    ST_NUM_ESIGN,
    ST_NUM_EXP,
    ST_LIT,
    ST_TRAILER, /* the object closed: whitespace only */
    ST_ERR,
};

enum { R_VALUE, R_KEY, R_TOPKEY, R_MODEL };

static const char *expected(const modelscan *s)
{
    switch (s->st) {
    case ST_START:
    case ST_TOP:
        return "a JSON object";
    case ST_BOM1:
    case ST_BOM2:
        return "the rest of a UTF-8 byte order mark (EF BB BF)";
    case ST_OBJ_FIRST:
        return "a string key or '}'";
    case ST_OBJ_KEY:
        return "a string key";
    case ST_COLON:
        return "':' after an object key";
    case ST_VALUE:
        return "a value";
    case ST_ARR_FIRST:
        return "a value or ']'";
    case ST_AFTER:
        return (s->stack[(s->depth - 1) / 8] >> ((s->depth - 1) % 8)) & 1 ? "',' or ']'"
                                                                          : "',' or '}'";
    case ST_STR:
        return "the end of a string '\"'";
    case ST_STR_ESC:
        return "an escape (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)";
    case ST_STR_U:
        return "four hex digits after \\u";
    case ST_NUM_MINUS:
        return "a digit after '-'";
    case ST_NUM_DOT:
        return "a digit after '.'";
    case ST_NUM_E:
    case ST_NUM_ESIGN:
        return "a digit in the exponent";
    case ST_LIT:
        return s->lit[0] == 't' ? "'true'" : s->lit[0] == 'f' ? "'false'" : "'null'";
    case ST_TRAILER:
        return "the end of the body after the JSON object";
    }
    return "more JSON";
}

static modelscan_status fail(modelscan *s, modelscan_code code, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static modelscan_status fail(modelscan *s, modelscan_code code, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err.msg, sizeof s->err.msg, fmt, ap);
    va_end(ap);
    s->err.code = code;
    s->err.offset = off;
    s->st = ST_ERR;
    return MODELSCAN_ERROR;
}

static modelscan_status syntax(modelscan *s, unsigned char c)
{
    char got[16];
    if (c >= 0x21 && c <= 0x7e)
        snprintf(got, sizeof got, "'%c'", c);
    else
        snprintf(got, sizeof got, "byte 0x%02x", c);
    return fail(s, MODELSCAN_E_SYNTAX, s->pos, "malformed JSON at byte %zu: expected %s, found %s",
                s->pos, expected(s), got);
}

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool top_is_array(const modelscan *s)
{
    return (s->stack[(s->depth - 1) / 8] >> ((s->depth - 1) % 8)) & 1;
}

static modelscan_status push(modelscan *s, bool array)
{
    if (s->depth >= MODELSCAN_MAX_DEPTH)
        return fail(s, MODELSCAN_E_DEPTH, s->pos, "JSON nested deeper than %d levels at byte %zu",
                    MODELSCAN_MAX_DEPTH, s->pos);
    unsigned d = s->depth++;
    if (array)
        s->stack[d / 8] |= (uint8_t)(1u << (d % 8));
    else
        s->stack[d / 8] &= (uint8_t) ~(1u << (d % 8));
    s->st = array ? ST_ARR_FIRST : ST_OBJ_FIRST;
    return MODELSCAN_MORE;
}

/* The model value's bytes. */
static modelscan_status model_byte(modelscan *s, unsigned char c)
{
    if (s->model_len >= MODELSCAN_MAX_MODEL)
        return fail(s, MODELSCAN_E_MODEL_VALUE, s->pos,
                    "\"model\" at byte %zu is longer than %d bytes", s->span_start,
                    MODELSCAN_MAX_MODEL);
    s->model[s->model_len++] = (char)c;
    return MODELSCAN_MORE;
}

static modelscan_status model_cp(modelscan *s, uint32_t u)
{
    unsigned char b[4];
    int n;
    if (u < 0x20 || u == 0x7f) s->bad = s->bad ? s->bad : 2;
    if (u < 0x80) {
        b[0] = (unsigned char)u, n = 1;
    } else if (u < 0x800) {
        b[0] = (unsigned char)(0xc0 | u >> 6), b[1] = (unsigned char)(0x80 | (u & 0x3f)), n = 2;
    } else if (u < 0x10000) {
        b[0] = (unsigned char)(0xe0 | u >> 12), b[1] = (unsigned char)(0x80 | ((u >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (u & 0x3f)), n = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | u >> 18), b[1] = (unsigned char)(0x80 | ((u >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((u >> 6) & 0x3f)), b[3] = (unsigned char)(0x80 | (u & 0x3f)),
        n = 4;
    }
    for (int i = 0; i < n; i++)
        if (model_byte(s, b[i]) == MODELSCAN_ERROR) return MODELSCAN_ERROR;
    return MODELSCAN_MORE;
}

/* One decoded character of the current string (a code point from an
 * escape, or a raw byte when raw).  Only the top-level keys and the model
 * value care. */
static modelscan_status str_char(modelscan *s, uint32_t c, bool raw)
{
    if (s->role == R_TOPKEY) {
        if (s->hi) s->key_match = -1, s->hi = 0; /* an unpaired surrogate is not "model" */
        if (c >= 0xd800 && c <= 0xdbff && !raw) {
            s->hi = c;
            return MODELSCAN_MORE;
        }
        if (s->key_match >= 0 && s->key_match < 5 && c == (uint32_t) "model"[s->key_match])
            s->key_match++;
        else
            s->key_match = -1;
        return MODELSCAN_MORE;
    }
    if (s->role != R_MODEL) return MODELSCAN_MORE;
    if (raw) {
        if (s->hi) s->bad = s->bad ? s->bad : 1, s->hi = 0;
        if (c == 0x7f) s->bad = s->bad ? s->bad : 2;
        return model_byte(s, (unsigned char)c);
    }
    if (s->hi) {
        if (c >= 0xdc00 && c <= 0xdfff) {
            uint32_t u = 0x10000 + ((s->hi - 0xd800) << 10) + (c - 0xdc00);
            s->hi = 0;
            return model_cp(s, u);
        }
        s->bad = s->bad ? s->bad : 1;
        s->hi = 0;
    }
    if (c >= 0xd800 && c <= 0xdbff) {
        s->hi = c;
        return MODELSCAN_MORE;
    }
    if (c >= 0xdc00 && c <= 0xdfff) {
        s->bad = s->bad ? s->bad : 1;
        return MODELSCAN_MORE;
    }
    return model_cp(s, c);
}

static bool utf8_ok(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t k;
        uint32_t u, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, u = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, u = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, u = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (i + k >= n) return false;
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80) return false;
            u = u << 6 | (p[i + j] & 0x3f);
        }
        if (u < min || u > 0x10ffff || (u >= 0xd800 && u <= 0xdfff)) return false;
        i += k + 1;
    }
    return true;
}

/* The closing quote of a string. */
static modelscan_status str_end(modelscan *s)
{
    if (s->role == R_KEY) {
        s->st = ST_COLON;
        return MODELSCAN_MORE;
    }
    if (s->role == R_TOPKEY) {
        s->st = ST_COLON;
        if (s->hi) s->key_match = -1, s->hi = 0;
        if (s->key_match != 5) return MODELSCAN_MORE;
        if (s->model_key != SIZE_MAX)
            return fail(s, MODELSCAN_E_DUPLICATE, s->key_start,
                        "\"model\" appears twice at the top level (bytes %zu and %zu): ambiguous",
                        s->model_key, s->key_start);
        s->model_key = s->key_start;
        s->want_model = true;
        return MODELSCAN_MORE;
    }
    s->st = ST_AFTER;
    if (s->role != R_MODEL) return MODELSCAN_MORE;
    if (s->hi) s->bad = s->bad ? s->bad : 1, s->hi = 0;
    s->model[s->model_len] = '\0';
    if (s->bad == 1)
        return fail(s, MODELSCAN_E_MODEL_VALUE, s->span_start,
                    "\"model\" at byte %zu has an unpaired UTF-16 surrogate escape", s->span_start);
    if (s->bad == 2)
        return fail(s, MODELSCAN_E_MODEL_VALUE, s->span_start,
                    "\"model\" at byte %zu holds a control character", s->span_start);
    if (!utf8_ok((const unsigned char *)s->model, s->model_len))
        return fail(s, MODELSCAN_E_MODEL_VALUE, s->span_start,
                    "\"model\" at byte %zu is not valid UTF-8", s->span_start);
    if (!s->model_len)
        return fail(s, MODELSCAN_E_MODEL_VALUE, s->span_start, "\"model\" at byte %zu is empty",
                    s->span_start);
    s->span_end = s->pos + 1;
    s->found = true;
    return MODELSCAN_MORE;
}

static const char *value_kind(unsigned char c)
{
    switch (c) {
    case '{':
        return "an object";
    case '[':
        return "an array";
    case '"':
        return "a string";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}

static bool value_start(unsigned char c)
{
    return c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' ||
           c == 'f' || c == 'n';
}

/* A value begins with c (ST_VALUE, ST_ARR_FIRST). */
static modelscan_status begin_value(modelscan *s, unsigned char c)
{
    if (!value_start(c)) return syntax(s, c);
    if (s->want_model) {
        s->want_model = false;
        if (c != '"')
            return fail(s, MODELSCAN_E_MODEL_TYPE, s->pos,
                        "\"model\" must be a string, found %s at byte %zu", value_kind(c), s->pos);
        s->role = R_MODEL;
        s->span_start = s->pos;
        s->model_len = 0;
        s->bad = 0;
        s->hi = 0;
        s->st = ST_STR;
        return MODELSCAN_MORE;
    }
    switch (c) {
    case '{':
        return push(s, false);
    case '[':
        return push(s, true);
    case '"':
        s->role = R_VALUE, s->st = ST_STR;
        return MODELSCAN_MORE;
    case '-':
        s->st = ST_NUM_MINUS;
        return MODELSCAN_MORE;
    case '0':
        s->st = ST_NUM_ZERO;
        return MODELSCAN_MORE;
    case 't':
        s->lit = "true", s->sub = 1, s->st = ST_LIT;
        return MODELSCAN_MORE;
    case 'f':
        s->lit = "false", s->sub = 1, s->st = ST_LIT;
        return MODELSCAN_MORE;
    case 'n':
        s->lit = "null", s->sub = 1, s->st = ST_LIT;
        return MODELSCAN_MORE;
    default:
        s->st = ST_NUM_INT;
        return MODELSCAN_MORE;
    }
}

/* A container closes with c. */
static modelscan_status close_container(modelscan *s)
{
    s->depth--;
    if (s->depth) {
        s->st = ST_AFTER;
        return MODELSCAN_MORE;
    }
    if (!s->found)
        return fail(s, MODELSCAN_E_NO_MODEL, s->pos,
                    "no \"model\" key at the top level of the JSON object (it ends at byte %zu)",
                    s->pos);
    s->st = ST_TRAILER;
    return MODELSCAN_MORE;
}

/* ---- one handler per state (or family of states): each takes the byte
 * at s->pos and returns MODELSCAN_MORE, or MODELSCAN_ERROR with err set ---- */

/* ST_TOP: whitespace or the object; any other value is not an object. */
static modelscan_status on_top(modelscan *s, unsigned char c)
{
    if (is_ws(c)) return MODELSCAN_MORE;
    if (c == '{') return push(s, false);
    if (value_start(c))
        return fail(s, MODELSCAN_E_NOT_OBJECT, s->pos,
                    "the request body is not a JSON object: found %s at byte %zu", value_kind(c),
                    s->pos);
    return syntax(s, c);
}

/* ST_START: byte 0, a UTF-8 BOM or already the top. */
static modelscan_status on_start(modelscan *s, unsigned char c)
{
    if (c == 0xef) {
        s->st = ST_BOM1;
        return MODELSCAN_MORE;
    }
    s->st = ST_TOP;
    return on_top(s, c);
}

static modelscan_status on_bom1(modelscan *s, unsigned char c)
{
    if (c != 0xbb) return syntax(s, c);
    s->st = ST_BOM2;
    return MODELSCAN_MORE;
}

static modelscan_status on_bom2(modelscan *s, unsigned char c)
{
    if (c != 0xbf) return syntax(s, c);
    s->st = ST_TOP;
    return MODELSCAN_MORE;
}

/* ST_OBJ_FIRST, ST_OBJ_KEY: a key opens; at the top level it may be "model". */
static modelscan_status on_key(modelscan *s, unsigned char c)
{
    if (is_ws(c)) return MODELSCAN_MORE;
    if (c == '}' && s->st == ST_OBJ_FIRST) return close_container(s);
    if (c != '"') return syntax(s, c);
    s->st = ST_STR;
    if (s->depth == 1) {
        s->role = R_TOPKEY;
        s->key_match = 0;
        s->key_start = s->pos;
        s->hi = 0;
    } else {
        s->role = R_KEY;
    }
    return MODELSCAN_MORE;
}

static modelscan_status on_colon(modelscan *s, unsigned char c)
{
    if (is_ws(c)) return MODELSCAN_MORE;
    if (c != ':') return syntax(s, c);
    s->st = ST_VALUE;
    return MODELSCAN_MORE;
}

/* ST_VALUE, ST_ARR_FIRST: a value begins (or the empty array ends). */
static modelscan_status on_value(modelscan *s, unsigned char c)
{
    if (is_ws(c)) return MODELSCAN_MORE;
    if (c == ']' && s->st == ST_ARR_FIRST) return close_container(s);
    return begin_value(s, c);
}

/* ST_AFTER: ',' or the end of the container the value is in.  inline:
 * every value's end passes here (a number's through end_number), and gcc
 * left to itself calls it rather than inlining it: a third slower on a
 * body of numbers. */
static inline modelscan_status on_after(modelscan *s, unsigned char c)
{
    if (is_ws(c)) return MODELSCAN_MORE;
    if (c == ',') {
        s->st = top_is_array(s) ? ST_VALUE : ST_OBJ_KEY;
        return MODELSCAN_MORE;
    }
    if (c == (top_is_array(s) ? ']' : '}')) return close_container(s);
    return syntax(s, c);
}

static modelscan_status on_str(modelscan *s, unsigned char c)
{
    if (c == '"') return str_end(s);
    if (c == '\\') {
        s->st = ST_STR_ESC;
        return MODELSCAN_MORE;
    }
    if (c < 0x20)
        return fail(
            s, MODELSCAN_E_SYNTAX, s->pos,
            "malformed JSON at byte %zu: control byte 0x%02x in a string, expected it escaped",
            s->pos, c);
    return str_char(s, c, true);
}

/* ST_STR_ESC: the byte after a backslash. */
static modelscan_status on_str_esc(modelscan *s, unsigned char c)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (c == 'u') {
        s->st = ST_STR_U;
        s->sub = 0;
        s->cp = 0;
        return MODELSCAN_MORE;
    }
    const char *k = c ? strchr(from, c) : NULL;
    if (!k) return syntax(s, c);
    s->st = ST_STR;
    return str_char(s, (unsigned char)to[k - from], false);
}

/* ST_STR_U: one of the four hex digits of a \u escape. */
static modelscan_status on_str_u(modelscan *s, unsigned char c)
{
    int v = hexval(c);
    if (v < 0) return syntax(s, c);
    s->cp = s->cp << 4 | (uint32_t)v;
    if (++s->sub < 4) return MODELSCAN_MORE;
    s->st = ST_STR;
    return str_char(s, s->cp, false);
}

/* A number ended before c, which belongs to what follows it. */
static modelscan_status end_number(modelscan *s, unsigned char c)
{
    s->st = ST_AFTER;
    return on_after(s, c);
}

static modelscan_status on_num_minus(modelscan *s, unsigned char c)
{
    if (c == '0')
        s->st = ST_NUM_ZERO;
    else if (c >= '1' && c <= '9')
        s->st = ST_NUM_INT;
    else
        return syntax(s, c);
    return MODELSCAN_MORE;
}

/* ST_NUM_ZERO, ST_NUM_INT: the integer part goes on (not after a leading
 * 0), or a fraction or an exponent begins, or the number ends. */
static modelscan_status on_num_int(modelscan *s, unsigned char c)
{
    if (c >= '0' && c <= '9' && s->st == ST_NUM_INT) return MODELSCAN_MORE;
    if (c == '.') {
        s->st = ST_NUM_DOT;
        return MODELSCAN_MORE;
    }
    if (c == 'e' || c == 'E') {
        s->st = ST_NUM_E;
        return MODELSCAN_MORE;
    }
    return end_number(s, c);
}

static modelscan_status on_num_dot(modelscan *s, unsigned char c)
{
    if (c < '0' || c > '9') return syntax(s, c);
    s->st = ST_NUM_FRAC;
    return MODELSCAN_MORE;
}

static modelscan_status on_num_frac(modelscan *s, unsigned char c)
{
    if (c >= '0' && c <= '9') return MODELSCAN_MORE;
    if (c == 'e' || c == 'E') {
        s->st = ST_NUM_E;
        return MODELSCAN_MORE;
    }
    return end_number(s, c);
}

/* ST_NUM_ESIGN: the exponent's first digit. */
static modelscan_status on_num_esign(modelscan *s, unsigned char c)
{
    if (c < '0' || c > '9') return syntax(s, c);
    s->st = ST_NUM_EXP;
    return MODELSCAN_MORE;
}

/* ST_NUM_E: the exponent's sign or its first digit. */
static modelscan_status on_num_e(modelscan *s, unsigned char c)
{
    if (c == '+' || c == '-') {
        s->st = ST_NUM_ESIGN;
        return MODELSCAN_MORE;
    }
    return on_num_esign(s, c);
}

static modelscan_status on_num_exp(modelscan *s, unsigned char c)
{
    if (c >= '0' && c <= '9') return MODELSCAN_MORE;
    return end_number(s, c);
}

/* ST_LIT: the next letter of true, false or null. */
static modelscan_status on_lit(modelscan *s, unsigned char c)
{
    if (c != (unsigned char)s->lit[s->sub]) return syntax(s, c);
    if (!s->lit[++s->sub]) s->st = ST_AFTER;
    return MODELSCAN_MORE;
}

static modelscan_status on_trailer(modelscan *s, unsigned char c)
{
    if (is_ws(c)) return MODELSCAN_MORE;
    return syntax(s, c);
}

/* One byte: to the handler of the state the machine is in. */
static modelscan_status step(modelscan *s, unsigned char c)
{
    switch (s->st) {
    case ST_START:
        return on_start(s, c);
    case ST_BOM1:
        return on_bom1(s, c);
    case ST_BOM2:
        return on_bom2(s, c);
    case ST_TOP:
        return on_top(s, c);
    case ST_OBJ_FIRST:
    case ST_OBJ_KEY:
        return on_key(s, c);
    case ST_COLON:
        return on_colon(s, c);
    case ST_VALUE:
    case ST_ARR_FIRST:
        return on_value(s, c);
    case ST_AFTER:
        return on_after(s, c);
    case ST_STR:
        return on_str(s, c);
    case ST_STR_ESC:
        return on_str_esc(s, c);
    case ST_STR_U:
        return on_str_u(s, c);
    case ST_NUM_MINUS:
        return on_num_minus(s, c);
    case ST_NUM_ZERO:
    case ST_NUM_INT:
        return on_num_int(s, c);
    case ST_NUM_DOT:
        return on_num_dot(s, c);
    case ST_NUM_FRAC:
        return on_num_frac(s, c);
    case ST_NUM_E:
        return on_num_e(s, c);
    case ST_NUM_ESIGN:
        return on_num_esign(s, c);
    case ST_NUM_EXP:
        return on_num_exp(s, c);
    case ST_LIT:
        return on_lit(s, c);
    case ST_TRAILER:
        return on_trailer(s, c);
    }
    return MODELSCAN_ERROR;
}

void modelscan_init(modelscan *s, size_t limit)
{
    memset(s, 0, sizeof *s);
    s->limit = limit;
    s->st = ST_START;
    s->model_key = SIZE_MAX;
}

modelscan_status modelscan_feed(modelscan *s, const char *p, size_t n)
{
    if (s->st == ST_ERR) return MODELSCAN_ERROR;
    size_t take = n;
    bool over = s->limit && (s->pos > s->limit || n > s->limit - s->pos);
    if (over) take = s->limit - s->pos;
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < take; i++) {
        /* the bulk of a body is long strings nobody reads (prompts, images) */
        if (s->st == ST_STR && s->role <= R_KEY) {
            size_t j = i;
            while (j < take && u[j] != '"' && u[j] != '\\' && u[j] >= 0x20)
                j++;
            s->pos += j - i;
            i = j;
            if (i == take) break;
        }
        if (step(s, u[i]) == MODELSCAN_ERROR) return MODELSCAN_ERROR;
        s->pos++;
    }
    if (over)
        return fail(s, MODELSCAN_E_TOO_LARGE, s->limit,
                    "the request body is larger than the limit of %zu bytes", s->limit);
    return s->st == ST_TRAILER ? MODELSCAN_DONE : MODELSCAN_MORE;
}

modelscan_status modelscan_finish(modelscan *s)
{
    switch (s->st) {
    case ST_ERR:
        return MODELSCAN_ERROR;
    case ST_TRAILER:
        return MODELSCAN_DONE;
    case ST_START:
    case ST_TOP:
        return fail(s, MODELSCAN_E_SYNTAX, s->pos,
                    "the request body is empty, expected a JSON object");
    case ST_NUM_ZERO:
    case ST_NUM_INT:
    case ST_NUM_FRAC:
    case ST_NUM_EXP:
        s->st = ST_AFTER; /* a number may end here: what follows it */
    /* fall through */
    default:
        return fail(s, MODELSCAN_E_SYNTAX, s->pos,
                    "malformed JSON: the body ends at byte %zu, expected %s", s->pos, expected(s));
    }
}

int modelscan_rewrite(const modelscan *s, const char *seen, size_t seen_len, const char *id,
                      buf *out, int64_t *delta)
{
    if (!s->found || s->span_end > seen_len || s->span_start >= s->span_end) return -1;
    size_t before = out->len;
    buf_add(out, seen, s->span_start);
    buf_json_str(out, id);
    buf_add(out, seen + s->span_end, seen_len - s->span_end);
    *delta = (int64_t)(out->len - before) - (int64_t)seen_len;
    return 0;
}
