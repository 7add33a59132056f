// Whether the server has hippo's own procedure, and which version (its description starts with it).
SHOW PROCEDURES YIELD name, description
WHERE name = 'hippo.push'
RETURN description
