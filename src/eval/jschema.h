/* jschema.h - the JSON Schema subset the json_schema scorer checks
 * answers against (docs/eval.md "json_schema").
 *
 * Keywords: type (a name or a list of them: object, array, string,
 * number, integer, boolean, null), properties, required,
 * additionalProperties (true, false or a schema), items (one schema for
 * every element), enum, const, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum (numbers, as in draft 6 and later), minLength,
 * maxLength (in characters), minItems, maxItems; the annotations title,
 * description, $schema, $id, default and examples are accepted and change
 * nothing.  A schema may also be true or false.  Any other keyword
 * ($ref, pattern, oneOf, format, ...) is refused when the suite is loaded,
 * never ignored: a schema that says more than is checked would pass
 * answers it should fail.  Pure. */
#ifndef GPUMOD_EVAL_JSCHEMA_H
#define GPUMOD_EVAL_JSCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* schema is in the subset: 0, or -1 with err naming the place
 * ("properties.age: keyword 'pattern' is not supported"). */
int jschema_check(const cJSON *schema, char *err, size_t errlen);
/* value satisfies schema (which passed jschema_check): 0, or -1 with err
 * naming the first violation by its path ("$.age: 130 is above the
 * maximum 120"). */
int jschema_validate(const cJSON *schema, const cJSON *value, char *err, size_t errlen);
/* Deep equality of JSON values: numbers by value (1 == 1.0), objects by
 * their keys whatever the order, arrays in order. */
bool json_equal(const cJSON *a, const cJSON *b);
/* "object" "array" "string" "number" "boolean" "null" */
const char *json_type_name(const cJSON *v);

#endif
