// How many entries one namespace of the key-value area holds (hippo doctor counts API keys).
MATCH (v:Value {namespace: $namespace})
RETURN count(v) AS n
