// Reads a JSON array of JSONC documents on stdin and writes, for each, what VS Code's own
// parser (npm jsonc-parser) makes of it: {errors: [{error, offset, length}], value, empty}.
// Options as VS Code reads settings.json: comments and trailing commas allowed. A leading
// BOM is stripped first, as VS Code does when it reads the file.
'use strict';

const { parse, printParseErrorCode } = require('jsonc-parser');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  input += chunk;
});
process.stdin.on('end', () => {
  const docs = JSON.parse(input);
  const results = docs.map((doc) => {
    const text = doc.charCodeAt(0) === 0xfeff ? doc.slice(1) : doc;
    const errors = [];
    const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
    return {
      errors: errors.map((e) => ({ error: printParseErrorCode(e.error), offset: e.offset, length: e.length })),
      value: value === undefined ? null : value,
      empty: value === undefined,
    };
  });
  process.stdout.write(JSON.stringify(results));
});
