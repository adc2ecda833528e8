/** `${{ variables.NAME }}`, spaces inside the braces optional: the one placeholder of package texts. */
export const PACKAGE_PLACEHOLDER = /\$\{\{\s*variables\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g
