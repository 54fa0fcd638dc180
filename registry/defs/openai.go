package defs

import "slices"

// openAIDropped are the keywords OpenAI rule 1 removes.
var openAIDropped = []string{"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "unevaluatedProperties", "unevaluatedItems", "patternProperties", "propertyNames", "contains", "minContains", "maxContains", "prefixItems"}

// openAINode applies the OpenAI per-node rules to a node whose subschemas
// are converted already.
func openAINode(node map[string]any) map[string]any {
	openAIDrop(node)
	openAIArrayItems(node)
	return node
}

// openAIDrop is OpenAI rule 1: the keywords strict mode rejects
// (openAIDropped) are removed everywhere.
func openAIDrop(node map[string]any) {
	for _, k := range openAIDropped {
		delete(node, k)
	}
}

// openAIArrayItems is OpenAI rule 2: an array schema (type "array" or a
// type list containing it) without items gets items {}.
func openAIArrayItems(node map[string]any) {
	if slices.Contains(typeList(node), "array") {
		if _, ok := node["items"]; !ok {
			node["items"] = map[string]any{}
		}
	}
}

// openAITop is shared step 5 and OpenAI rule 3 on the converted top node:
// anyOf flattened, enum, const, nullable and items removed, type "object",
// and properties always present ({} when none).
func openAITop(node map[string]any) map[string]any {
	flattenTopAnyOf(node)
	for _, k := range []string{"enum", "const", "nullable"} {
		delete(node, k)
	}
	node["type"] = "object"
	delete(node, "items")
	if _, ok := node["properties"].(map[string]any); !ok {
		node["properties"] = map[string]any{}
	}
	return node
}
