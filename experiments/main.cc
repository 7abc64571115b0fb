// The `bagua` command line (placeholder until experiments/ lands).
int main() { return 0; }
