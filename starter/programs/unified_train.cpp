// Placeholder: replaced by its issue.
int main() { return 1; }
