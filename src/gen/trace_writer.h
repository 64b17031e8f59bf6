// PLACEHOLDER: to be written (ferret gen).
#pragma once
