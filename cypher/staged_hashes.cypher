// Text hashes with a staged vector (a re-embedding resumes from them).
MATCH (v:StagedVector)
RETURN v.hash AS hash
