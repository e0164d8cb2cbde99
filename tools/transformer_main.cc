// The generic driver: every built-in op, layer and task, plus plugins.
#include "tasks/driver/driver.h"

int main(int argc, char** argv) { return tfm::DriverMain(argc, argv, ""); }
