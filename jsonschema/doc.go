// Package jsonschema is FreeCode's one JSON Schema walker: it turns a raw
// tool input schema into a self-contained one, and validates arguments
// against it. Package mcp uses it for tools' input schemas, the registry for
// the built-ins' schemas and the provider dialects for their rewrites.
//
// # Resolution
//
// [Resolve] rewrites a schema so that it needs nothing outside itself. The
// rules, applied in this order:
//
//   - Input. An absent, empty or null schema, `true` and `{}` all become
//     {"type":"object","properties":{}}. Anything else must be a JSON object of
//     at most [MaxSchemaBytes] bytes.
//   - Local references are inlined. A reference is local when it is "", "#",
//     "#/json/pointer" or "#anchor", optionally prefixed by the root's own $id.
//     Pointers are percent-decoded first, then split on "/", then "~1" → "/"
//     and "~0" → "~" (RFC 6901 §6). Anchors are $anchor values and, for older
//     drafts, $id values of the form "#name". All references resolve against
//     the document root; a nested $id does not start a new base.
//   - References that are not followed. Everything else ("https://…",
//     "file:…", "other.json#…", "urn:…") is never fetched ([ErrExternalRef]),
//     and a pointer or anchor that names nothing, or is malformed, has no
//     target ([ErrUnresolvedRef]). Neither fails Resolve. The schema object
//     holding such a $ref is resolved as if its $ref were {}, any value, so
//     its siblings still apply ({"$ref":"https://…","type":"string"} becomes
//     {"type":"string"}, a bare one {}), and Resolve returns a [Warning]
//     naming the reference, where it is in the input, why it was not
//     followed and what was left out. {} only ever accepts more, except
//     in two kinds of place, where a keyword is left out instead:
//     (1) Below a guard keyword — not, oneOf, if, and contains beside
//     maxContains — {} could reject more. When such a $ref lies below one
//     (in the input, or in a target inlined there), the outermost guard
//     keyword on the way is left out of its schema object, with what only
//     means something beside it (if takes then and else, contains takes
//     minContains and maxContains). (2) unevaluatedProperties and
//     unevaluatedItems depend on what is evaluated in place below their
//     schema object (through $ref, allOf, anyOf, oneOf, not, if/then/else,
//     dependentSchemas, dependencies): when such a $ref, or a guard keyword
//     left out, is in place below them, they are left out of it too. A
//     reference kept in the output (recursion, below) to a target that
//     holds such a $ref, directly or through other targets, leaves out the
//     keywords above it the same way, without a warning of its own (the
//     target's warning stands for it). So validation accepts every value
//     the schema would accept whatever the unknown parts say, and checks the
//     rest as before. One reference inlined at several places gives one
//     warning per outcome; at most [MaxWarnings] are listed per schema, the
//     last one listed counting the rest (Warning.More). Only references the
//     output needs count: those in unused definitions are ignored.
//   - $ref with siblings. The target is resolved, the siblings are resolved,
//     and the two are combined. When either side has no validation keywords
//     (only annotations such as description, title, default, examples), the
//     two objects are merged and the siblings' annotations win. Otherwise the
//     result is {<sibling annotations>, "allOf": [<target>, <sibling
//     constraints>]}, and the allOf rule below may merge it again. Siblings of
//     $ref are honoured whatever the declared draft (the draft 2019-09 rule).
//   - allOf merge. An allOf is folded into the schema that holds it when all
//     of the following hold, and is otherwise kept as it is:
//     every member is `true` or an object using only type, properties,
//     required, title, description and $comment; every type present (in the
//     holder or a member) is the string "object"; the holder has neither
//     additionalProperties nor unevaluatedProperties; a property named in two
//     places has deep-equal schemas in both; and no two members disagree on
//     title, description or $comment unless the holder sets it (the holder's
//     value wins). The result takes the union of properties, the union of
//     required (in first-seen order, no duplicates) and type "object" when any
//     part had a type.
//   - oneOf, anyOf, not, if/then/else and every other applicator are kept;
//     their subschemas are resolved.
//   - Recursion. A reference target that can reach itself through references
//     cannot be inlined. Each such target is emitted once under the root's
//     "$defs" ("definitions" for draft-04/06/07 schemas), named after the last
//     token of its pointer (sanitised, with _2, _3… on clashes), and every
//     occurrence becomes {"$ref":"#/$defs/<name>"}; a definition that no
//     longer has a reference once a guard keyword was left out (above) is
//     not emitted. A cycle through the root
//     uses {"$ref":"#"}. The output therefore stays valid and finite while
//     still describing unbounded data. A cycle made only of in-place
//     applicators ($ref, allOf, anyOf, oneOf, not, if/then/else,
//     dependentSchemas) would never consume any of the instance and is
//     rejected with [ErrRefCycle].
//   - Clean-up. The input's own $defs/definitions are dropped (whatever was
//     used has been inlined). $id, $anchor, $dynamicAnchor and
//     $recursiveAnchor are dropped everywhere because inlining can duplicate
//     subschemas. $schema is kept at the root only, and only when it names a
//     draft known to the validator (draft-04, -06, -07, 2019-09, 2020-12);
//     otherwise it is dropped and 2020-12 applies. $dynamicRef and
//     $recursiveRef are rejected ([ErrUnsupported]), as are cycles
//     ([ErrRefCycle]) and the bounds below ([ErrTooComplex]), whatever
//     references beside them could not be followed. Unknown keywords and
//     non-schema values (enum, const, default, examples, …) are copied
//     verbatim.
//   - Top level. A root without "type" gets "type":"object" when it has
//     object keywords (properties, required, additionalProperties, …) or no
//     validation keywords at all; a root without validation keywords also
//     gets "properties":{}. A root whose type cannot be "object" is an error,
//     because tool arguments are always an object.
//   - Bounds. Schema nesting deeper than [MaxDepth], more than [MaxRefTargets]
//     distinct reference targets, or an output larger than about
//     [MaxOutputBytes] (what exponential reference fan-out produces) fail with
//     [ErrTooComplex].
//
// The output is deterministic: object keys are sorted and HTML characters are
// not escaped.
//
// # Walking schemas
//
// One keyword table says what every keyword is ([KeywordOf]): where its
// value holds subschemas (one, a list, an object of them), whether they
// apply to the instance in place, to its parts or only through references,
// whether the keyword is a constraint or an annotation, and which keywords
// are core. [Subschemas] visits and [Rewrite] rewrites the subschemas
// directly inside a schema object by that table; Resolve, the validator's
// cost estimate and meter, and the provider dialects (registry/defs) all
// walk schemas with them. [Pointer] evaluates an RFC 6901 JSON pointer and
// [Lookup] follows a local reference the way Resolve does, which is what
// the references kept in Resolve's output mean. [Decode], [Encode] and
// [Canonical] read and write JSON deterministically.
//
// # Validation
//
// [Compile] builds a [Validator] with github.com/santhosh-tekuri/jsonschema/v6
// and no URL loaders at all, so nothing is read from disk or network. A
// missing $schema means draft 2020-12. Formats are annotations only, in every
// draft: servers declare them loosely and check their own input, so a
// "format" never rejects arguments (the one exception is "regex" under
// draft-07 and older, which the library always checks).
//
// [Prepare] does both and compiles once; Resolve's output always compiles.
//
// [Validator.Validate] reports every violation at once as a [ValidationError]
// whose message is written for a language model to act on.
//
// # Bounded work
//
// The library cannot be interrupted and some schemas make its work grow much
// faster than the arguments: every patternProperties expression is tried on
// every member, a large pattern runs over a long string, nested anyOf
// alternatives that both descend multiply. [Validator.ValidateContext]
// therefore bounds it three ways. Before validating, an estimate (object
// members × patternProperties, strings × pattern keywords, values × the
// largest enum) over [MaxValidationSteps] is refused with [ErrTooCostly]
// without validating anything. While validating, hooks compiled into the
// schema (a vocabulary without keywords on every schema that applies
// subschemas, and the regular-expression engine) count steps and stop the
// library at [MaxValidationSteps] ([ErrTooCostly]) or as soon as the context
// ends (its cause). Validations of one Validator take turns, since the count
// lives with the compiled schema.
package jsonschema
