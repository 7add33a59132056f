// The vector indexes hippo owns, with their dimension, label and quantization (to rebuild one whose
// dimension is stale, one left on the records by a store of schema version 1, or on request one
// built with int8 codes, schema_vector_indexes.cypher).
SHOW VECTOR INDEXES YIELD name, options, labelsOrTypes
WHERE name IN ['passage_embedding', 'entity_embedding', 'fact_embedding']
RETURN name, options.indexConfig.`vector.dimensions` AS dim, labelsOrTypes AS labels,
       coalesce(options.indexConfig.`vector.quantization.enabled`, false) AS quantized
